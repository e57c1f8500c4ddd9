// A minimal Cloudflare Sandbox bridge Worker for sandscope.
//
// The bridge from @cloudflare/sandbox serves the 1.0-preview HTTP/SSE/WebSocket API under /v1 and
// /health; every other path falls through to the small handler below. The Worker must also export
// the two Durable Object classes the bridge addresses through its bindings: Sandbox (one per
// container) and WarmPool (the singleton that maps sandbox IDs to containers).
//
// Authentication: set the SANDBOX_API_KEY secret (`npx wrangler secret put SANDBOX_API_KEY`).
// Without it the bridge serves every route unauthenticated.
import { bridge } from "@cloudflare/sandbox/bridge";

export { Sandbox } from "@cloudflare/sandbox";
export { WarmPool } from "@cloudflare/sandbox/bridge";

export default bridge({
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/") {
      return new Response(
        "sandscope bridge: the API lives under /v1 (document: /v1/openapi.json); health: /health\n",
        { status: 200, headers: { "Content-Type": "text/plain; charset=utf-8" } },
      );
    }
    return new Response("Not Found", { status: 404 });
  },
});
