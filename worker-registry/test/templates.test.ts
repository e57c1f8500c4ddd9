// The two templates' own entry modules (../worker/src/index.ts, ../worker-stable/src/index.ts) with
// the real @cloudflare/sandbox bridge() of each package, on the routes that need no container: the
// registry sits in front of the real handler, keeps its 401s, and adds the list route to the real
// OpenAPI document without hiding the routes sandscope detects the dialect from.
// Needs `npm ci` in worker/ and worker-stable/ first (each template resolves its own package).
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import preview from "../../worker/src/index";
import stable from "../../worker-stable/src/index";

const BASE = "https://bridge.test";
const AUTH = { Authorization: "Bearer test-key" };
const UNAUTHORIZED = '{"error":"Unauthorized","code":"unauthorized"}';

type Template = typeof preview;

async function call(t: Template, path: string, init: RequestInit = {}, over: Record<string, unknown> = {}): Promise<Response> {
  const ctx = createExecutionContext();
  const req = new Request(BASE + path, init) as Request<unknown, IncomingRequestCfProperties>;
  const res = await t.fetch(req, { ...env, ...over }, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

// sandscope's dialect rule (client.ParseCapabilities): which routes the document lists.
function dialect(paths: Record<string, unknown>): string {
  if ("/v1/sandbox/{id}/processes" in paths || "/v1/sandbox/{id}/terminals/{terminalId}/connect" in paths) return "preview";
  if ("/v1/sandbox/{id}/exec" in paths || "/v1/sandbox/{id}/pty" in paths || "/v1/sandbox/{id}/session" in paths) return "stable";
  return "unknown";
}

for (const [name, template, want] of [["worker/ (1.0 preview)", preview, "preview"], ["worker-stable/ (0.12.10)", stable, "stable"]] as const) {
  describe(name, () => {
    it("announces the list route in the package's own document, whose routes still name the dialect", async () => {
      const res = await call(template, "/v1/openapi.json", { headers: AUTH });
      expect(res.status).toBe(200);
      const doc = await res.json<{ openapi: string; paths: Record<string, any>; components: { responses: Record<string, unknown> } }>();
      expect(doc.openapi).toMatch(/^3\./);
      expect(dialect(doc.paths)).toBe(want);
      expect(doc.paths["/v1/x-sandscope/sandboxes"].get.operationId).toBe("listSandboxes");
      expect(doc.paths["/v1/x-sandscope/sandboxes"].get["x-sandscope-extension"]).toBe(true);
      expect(doc.components.responses.Unauthorized).toBeDefined();
      // nothing else is marked as an extension: the registry is the only one
      const marked = Object.entries(doc.paths).filter(([, item]) =>
        item["x-sandscope-extension"] === true || Object.values(item).some((op: any) => op?.["x-sandscope-extension"] === true));
      expect(marked.map(([p]) => p)).toEqual(["/v1/x-sandscope/sandboxes"]);
    });

    it("answers 401 on the list route exactly as the package answers its own routes", async () => {
      const own = await call(template, "/v1/sandbox", { method: "POST" });
      const list = await call(template, "/v1/x-sandscope/sandboxes");
      expect(own.status).toBe(401);
      expect(list.status).toBe(401);
      expect(await own.text()).toBe(UNAUTHORIZED);
      expect(await list.text()).toBe(UNAUTHORIZED);
      expect(list.headers.get("Content-Type")).toBe(own.headers.get("Content-Type"));
      expect((await call(template, "/v1/openapi.json")).status).toBe(401);
    });

    it("lists an ID the package minted, with the request that created it", async () => {
      const created = await call(template, "/v1/sandbox", { method: "POST", headers: { ...AUTH, "User-Agent": "orchestrator" } });
      expect(created.status).toBe(200);
      const { id } = await created.json<{ id: string }>();
      const list = await (await call(template, "/v1/x-sandscope/sandboxes", { headers: AUTH })).json<{ id: string; running: boolean; createdBy: unknown }[]>();
      expect(list.find((e) => e.id === id)).toMatchObject({
        id, running: false, createdBy: { method: "POST", path: "/v1/sandbox", userAgent: "orchestrator" },
      });
    });

    it("with REGISTRY=off, the route is the package's own 404 and the document is the package's", async () => {
      const off = { REGISTRY: "off" };
      const route = await call(template, "/v1/x-sandscope/sandboxes", { headers: AUTH }, off);
      const unknown = await call(template, "/v1/no-such-route", { headers: AUTH }, off);
      expect(route.status).toBe(404);
      expect(await route.text()).toBe(await unknown.text());
      const doc = await (await call(template, "/v1/openapi.json", { headers: AUTH }, off)).json<{ paths: Record<string, unknown> }>();
      expect(doc.paths["/v1/x-sandscope/sandboxes"]).toBeUndefined();
    });

    it("still serves the template's own root page and the package's health route", async () => {
      expect((await call(template, "/")).status).toBe(200);
      expect(await (await call(template, "/health")).json()).toMatchObject({ ok: expect.any(Boolean) });
    });
  });
}
