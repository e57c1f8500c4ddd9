// The Worker the registry tests run in the Workers runtime: withRegistry() around a stub of the
// package's bridge() handler (the real one needs containers). The stub answers like the bridge
// where the registry depends on it: the bearer check and its 401 body, the minted ID of
// POST /v1/sandbox, 400 for a malformed ID, {running} from /running, 204 from DELETE, an SSE body
// from /exec, the OpenAPI document, and a plain-text 404 for routes it does not have.
import { DurableObject } from "cloudflare:workers";
import {
  SandboxRegistry,
  previewAllocates,
  stableAllocates,
  withRegistry,
  type RegistryEnv,
} from "../src/registry";

export { SandboxRegistry };

export interface TestEnv extends RegistryEnv {
  BrokenRegistry: DurableObjectNamespace<BrokenRegistry>;
}

/** A registry whose storage always fails: the bridge's answers must not notice. */
export class BrokenRegistry extends DurableObject {
  async note(): Promise<void> {
    throw new Error("registry storage is down");
  }
  async list(): Promise<never> {
    throw new Error("registry storage is down");
  }
}

function errorJson(error: string, code: string, status: number): Response {
  return new Response(JSON.stringify({ error, code }), { status, headers: { "Content-Type": "application/json" } });
}

export const STUB_DOCUMENT = {
  openapi: "3.1.0",
  info: { title: "stub bridge", version: "1.0.0" },
  paths: {
    "/v1/sandbox": { post: { operationId: "createSandbox" } },
    "/v1/sandbox/{id}": { delete: { operationId: "deleteSandbox" } },
    "/v1/sandbox/{id}/running": { get: { operationId: "running" } },
  },
  components: {
    securitySchemes: { BearerAuth: { type: "http", scheme: "bearer" } },
    responses: { Unauthorized: { description: "Missing or invalid Bearer token." } },
  },
  security: [{ BearerAuth: [] }],
};

function mintID(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz234567";
  const bytes = new Uint8Array(24);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => alphabet[b & 31]).join("");
}

/** The stand-in for bridge({fetch}): what the package's handler answers, without containers. */
export const stubBridge = {
  async fetch(request: Request, env: RegistryEnv): Promise<Response> {
    const url = new URL(request.url);
    const p = url.pathname;
    const authorized = () => {
      const token = env.SANDBOX_API_KEY;
      if (!token) return true;
      const h = request.headers.get("Authorization") ?? "";
      return (h.toLowerCase().startsWith("bearer ") ? h.slice(7) : "") === token;
    };
    if (p === "/health") return Response.json({ ok: true });
    if (p === "/v1/openapi.json" && request.method === "GET") {
      if (!authorized()) return errorJson("Unauthorized", "unauthorized", 401);
      return Response.json(STUB_DOCUMENT);
    }
    if (p === "/v1/sandbox" || p.startsWith("/v1/sandbox/")) {
      const [id = "", ...restParts] = p.slice("/v1/sandbox/".length).split("/");
      const rest = restParts.length ? "/" + restParts.join("/") : "";
      if (id && !/^[a-z2-7]{1,128}$/.test(id)) return errorJson("Invalid sandbox ID format", "invalid_request", 400);
      if (!authorized()) return errorJson("Unauthorized", "unauthorized", 401);
      if (p === "/v1/sandbox" && request.method === "POST") return Response.json({ id: mintID() });
      if (rest === "" && request.method === "DELETE") return new Response(null, { status: 204 });
      if (rest === "/running" && request.method === "GET") {
        return Response.json({ running: request.headers.get("X-Stub-Running") === "1" });
      }
      if (rest === "/processes" && request.method === "GET") return Response.json([]);
      if (rest === "/processes" && request.method === "POST") return Response.json({ id: "p1", status: "running" });
      if (rest === "/exec" && request.method === "POST") {
        return new Response("event: stdout\ndata: aGk=\n\nevent: exit\ndata: {\"exit_code\":0}\n\n", {
          headers: { "Content-Type": "text/event-stream" },
        });
      }
      if (rest === "/fail") return errorJson("pool error: boom", "pool_error", 502);
    }
    return new Response("404 Not Found", { status: 404, headers: { "Content-Type": "text/plain; charset=UTF-8" } });
  },
  async scheduled(): Promise<void> {},
};

/** The preview template's shape: the default export the tests reach through SELF too. */
export default withRegistry(stubBridge, { allocates: previewAllocates });

/** The stable template's shape. */
export const stable = withRegistry(stubBridge, { allocates: stableAllocates });
