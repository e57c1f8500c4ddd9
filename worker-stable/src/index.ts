// A minimal Cloudflare Sandbox bridge Worker for sandscope, on the stable 0.12 package.
//
// The bridge from @cloudflare/sandbox@0.12.10 serves the stable HTTP/WebSocket API under /v1 (exec,
// file, running, pty, session, tunnel, persist/hydrate, mount/unmount, pool) and /health; every
// other path falls through to the small handler below. The Worker must also export the two Durable
// Object classes the bridge addresses through its bindings: Sandbox (one per container) and
// WarmPool (the singleton that maps sandbox IDs to containers).
//
// Authentication: set the SANDBOX_API_KEY secret (`npx wrangler secret put SANDBOX_API_KEY`); the
// bridge then wants `Authorization: Bearer <key>` on /v1/sandbox*, /v1/pool/* and /v1/openapi.*.
// Without it the bridge serves every route unauthenticated.
//
// The registry: withRegistry() notes every sandbox ID a successful request created or addressed
// and serves the list at GET /v1/x-sandscope/sandboxes (same key), announced in /v1/openapi.json.
// REGISTRY=off turns it off; REGISTRY_TTL_HOURS (default 168) bounds how long an unseen entry stays.
import { bridge } from "@cloudflare/sandbox/bridge";
import { stableAllocates, withRegistry } from "../../worker-registry/src/registry";

export { Sandbox } from "@cloudflare/sandbox";
export { WarmPool } from "@cloudflare/sandbox/bridge";
// The sandbox registry (../worker-registry): lists every sandbox this Worker saw, for sandscope.
export { SandboxRegistry } from "../../worker-registry/src/registry";

export default withRegistry(
  bridge({
    async fetch(request: Request): Promise<Response> {
      const url = new URL(request.url);
      if (url.pathname === "/") {
        return new Response(
          "sandscope bridge (stable 0.12): the API lives under /v1 (document: /v1/openapi.json); health: /health\n",
          { status: 200, headers: { "Content-Type": "text/plain; charset=utf-8" } },
        );
      }
      return new Response("Not Found", { status: 404 });
    },
  }),
  { allocates: stableAllocates },
);
