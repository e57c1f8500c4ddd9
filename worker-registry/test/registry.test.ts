// The registry in the Workers runtime (workerd through @cloudflare/vitest-plugin), wrapped around
// a stub of the package's bridge() handler: auth, the list's shape, created/addressed/deleted, the
// growth bound, a failing or slow registry never failing or delaying the bridge's answer, the
// OpenAPI document announcing the route, and REGISTRY=off.
import { SELF, createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_TTL_HOURS,
  MAX_ENTRIES,
  previewAllocates,
  stableAllocates,
  type Observation,
  type RegistryEnv,
  type SandboxEntry,
} from "../src/registry";
import worker, { STUB_DOCUMENT, stable } from "./worker";

const BASE = "https://bridge.test";
const KEY = "test-key";
const AUTH = { Authorization: `Bearer ${KEY}` };
const HOUR = 3_600_000;

type Wrapped = typeof worker;

/** A request as the runtime hands it to a Worker. */
function rq(url: string, init?: RequestInit): Request<unknown, IncomingRequestCfProperties> {
  return new Request(url, init) as Request<unknown, IncomingRequestCfProperties>;
}

/** One request through a wrapped handler, with its waitUntil work finished before returning. */
async function call(path: string, init: RequestInit = {}, over: Partial<RegistryEnv> = {}, handler: Wrapped = worker): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await handler.fetch(rq(BASE + path, { ...init, headers: { ...AUTH, ...init.headers } }), { ...env, ...over }, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

async function list(over: Partial<RegistryEnv> = {}): Promise<SandboxEntry[]> {
  const res = await call("/v1/x-sandscope/sandboxes", {}, over);
  expect(res.status).toBe(200);
  return res.json();
}

async function entry(id: string, over: Partial<RegistryEnv> = {}): Promise<SandboxEntry | undefined> {
  return (await list(over)).find((e) => e.id === id);
}

/** n in the bridges' sandbox ID alphabet (base32, lower case). */
function b32(n: number): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz234567";
  let s = "";
  do {
    s += alphabet[n % 32];
    n = Math.floor(n / 32);
  } while (n > 0);
  return s;
}

let counter = 0;
/** A fresh valid sandbox ID per test (storage is shared between the tests of a file). */
function freshID(): string {
  return "t" + b32(++counter) + "x" + b32(Math.floor(Math.random() * 2 ** 40));
}

function registry() {
  const ns = env.SandboxRegistry!;
  return ns.get(ns.idFromName("registry"));
}

const note = (id: string, at: number, extra: Partial<Observation> = {}): Observation => ({
  id, at, kind: "seen", request: { method: "POST", path: `/v1/sandbox/${id}/processes`, userAgent: "test" }, ...extra,
});

describe("auth", () => {
  it("answers 401 with the bridge's body without the key, with a wrong key, and with a non-bearer scheme", async () => {
    const attempts: Record<string, string>[] = [{}, { Authorization: "Bearer wrong" }, { Authorization: `Basic ${KEY}` }, { Authorization: KEY }];
    for (const headers of attempts) {
      const ctx = createExecutionContext();
      const res = await worker.fetch(rq(BASE + "/v1/x-sandscope/sandboxes", { headers }), env, ctx);
      expect(res.status).toBe(401);
      expect(res.headers.get("Content-Type")).toBe("application/json");
      expect(await res.text()).toBe('{"error":"Unauthorized","code":"unauthorized"}');
      // the bridge's own route answers the same
      const bridge = await worker.fetch(rq(BASE + "/v1/sandbox", { method: "POST", headers }), env, ctx);
      expect(bridge.status).toBe(401);
      expect(await bridge.text()).toBe('{"error":"Unauthorized","code":"unauthorized"}');
      await waitOnExecutionContext(ctx);
    }
  });

  it("takes the key with the scheme in any case, as the bridge does", async () => {
    const res = await call("/v1/x-sandscope/sandboxes", { headers: { Authorization: `bearer ${KEY}` } });
    expect(res.status).toBe(200);
  });

  it("is open when the bridge is (no SANDBOX_API_KEY)", async () => {
    const ctx = createExecutionContext();
    const res = await worker.fetch(rq(BASE + "/v1/x-sandscope/sandboxes"), { ...env, SANDBOX_API_KEY: undefined }, ctx);
    expect(res.status).toBe(200);
  });

  it("is reached through the Worker's default export (SELF)", async () => {
    expect((await SELF.fetch(BASE + "/v1/x-sandscope/sandboxes")).status).toBe(401);
    const res = await SELF.fetch(BASE + "/v1/x-sandscope/sandboxes", { headers: AUTH });
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);
    expect(Array.isArray(await res.json())).toBe(true);
  });

  it("leaves other methods on the route to the bridge (its 404)", async () => {
    const res = await call("/v1/x-sandscope/sandboxes", { method: "POST" });
    expect(res.status).toBe(404);
    expect(await res.text()).toBe("404 Not Found");
  });
});

describe("list", () => {
  it("has the local bridge's SandboxInfo fields, in its order, then the registry's own", async () => {
    const created = await call("/v1/sandbox", { method: "POST", headers: { "User-Agent": "orchestrator/1.2" } });
    const { id } = await created.json<{ id: string }>();
    await call(`/v1/sandbox/${id}/processes`, { method: "POST", body: "{}" });
    const e = await entry(id);
    expect(e).toBeDefined();
    expect(Object.keys(e!)).toEqual(["id", "running", "processes", "terminals", "createdAt", "lastActiveAt", "runningObservedAt", "createdBy"]);
    expect(e!.running).toBe(true);
    expect(e!.processes).toBe(0);
    expect(e!.terminals).toBe(0);
    // RFC 3339 in UTC, as Go's time.Time decodes it
    expect(e!.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Date.parse(e!.lastActiveAt)).toBeGreaterThanOrEqual(Date.parse(e!.createdAt));
    expect(e!.createdBy).toEqual({ method: "POST", path: "/v1/sandbox", userAgent: "orchestrator/1.2" });
  });

  it("is sorted by ID", async () => {
    const ids = [freshID(), freshID(), freshID()];
    for (const id of ids) await call(`/v1/sandbox/${id}/processes`);
    const got = (await list()).map((e) => e.id);
    expect(got).toEqual([...got].sort());
    for (const id of ids) expect(got).toContain(id);
  });

  it("answers 503 with the bridge's error shape when the registry's storage fails", async () => {
    const res = await call("/v1/x-sandscope/sandboxes", {}, { SandboxRegistry: env.BrokenRegistry as never });
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: "sandbox registry unavailable", code: "registry_unavailable" });
  });
});

describe("created, addressed, deleted", () => {
  it("notes a minted ID as created, not running, by the create request", async () => {
    const res = await call("/v1/sandbox", { method: "POST" });
    expect(res.status).toBe(200);
    const { id } = await res.json<{ id: string }>();
    const e = await entry(id);
    expect(e).toMatchObject({ id, running: false, createdBy: { method: "POST", path: "/v1/sandbox" } });
    expect(e!.createdAt).toBe(e!.lastActiveAt);
  });

  it("notes an ID first addressed by a request, with that request as its origin and no query", async () => {
    const id = freshID();
    await call(`/v1/sandbox/${id}/exec?token=secret`, { method: "POST", body: "{}", headers: { "User-Agent": "agent-x" } });
    const e = await entry(id);
    expect(e?.createdBy).toEqual({ method: "POST", path: `/v1/sandbox/${id}/exec`, userAgent: "agent-x" });
    // preview's table: exec is not an allocating preview route, so nothing is known of the container
    expect(e?.running).toBe(false);
    expect(e?.runningObservedAt).toBeUndefined();
  });

  it("keeps first seen and the origin, moves last seen, and follows the running state", async () => {
    const id = freshID();
    await call(`/v1/sandbox/${id}/processes`); // a lookup: addressed, state unknown
    const first = await entry(id);
    expect(first?.running).toBe(false);
    await new Promise((r) => setTimeout(r, 5));
    await call(`/v1/sandbox/${id}/processes`, { method: "POST", body: "{}" }); // allocates
    const second = await entry(id);
    expect(second?.running).toBe(true);
    expect(second?.createdAt).toBe(first?.createdAt);
    expect(second?.createdBy.method).toBe("GET");
    expect(Date.parse(second!.lastActiveAt)).toBeGreaterThan(Date.parse(first!.lastActiveAt));
    await call(`/v1/sandbox/${id}/processes`); // a lookup leaves the state as it was
    expect((await entry(id))?.running).toBe(true);
    await call(`/v1/sandbox/${id}/running`); // the bridge says: not running
    expect((await entry(id))?.running).toBe(false);
    await call(`/v1/sandbox/${id}/running`, { headers: { "X-Stub-Running": "1" } });
    expect((await entry(id))?.running).toBe(true);
  });

  it("notes a streamed answer without reading it, and the client gets the whole stream", async () => {
    const id = freshID();
    const res = await call(`/v1/sandbox/${id}/exec`, { method: "POST", body: "{}" }, {}, stable);
    expect(await res.text()).toContain("event: exit");
    expect((await entry(id))?.running).toBe(true); // stable: every sandbox route allocates
  });

  it("notes nothing for failed requests: 401, 400, 5xx", async () => {
    const id = freshID();
    const ctx = createExecutionContext();
    const unauth = await worker.fetch(rq(`${BASE}/v1/sandbox/${id}/processes`, { method: "POST" }), env, ctx);
    await waitOnExecutionContext(ctx);
    expect(unauth.status).toBe(401);
    expect((await call(`/v1/sandbox/${id}/fail`)).status).toBe(502);
    expect((await call(`/v1/sandbox/NOT-VALID/processes`)).status).toBe(400);
    const ids = (await list()).map((e) => e.id);
    expect(ids).not.toContain(id);
    expect(ids).not.toContain("NOT-VALID");
  });

  it("drops a sandbox when the bridge's own delete succeeds, and a late older write does not bring it back", async () => {
    const id = freshID();
    await call(`/v1/sandbox/${id}/processes`, { method: "POST", body: "{}" });
    expect(await entry(id)).toBeDefined();
    const before = Date.now() - 1000;
    const del = await call(`/v1/sandbox/${id}`, { method: "DELETE" });
    expect(del.status).toBe(204);
    expect(await entry(id)).toBeUndefined();
    await registry().note([note(id, before)], Date.now(), DEFAULT_TTL_HOURS * HOUR);
    expect(await entry(id)).toBeUndefined();
    // a newer request to the same ID is a new sandbox
    await call(`/v1/sandbox/${id}/processes`, { method: "POST", body: "{}" });
    expect(await entry(id)).toBeDefined();
  });

  it("keeps the newest running state when writes arrive out of order", async () => {
    const id = freshID();
    const now = Date.now();
    await registry().note([note(id, now, { running: true })], now, DEFAULT_TTL_HOURS * HOUR);
    await registry().note([note(id, now - 1000, { running: false })], now, DEFAULT_TTL_HOURS * HOUR);
    const e = await entry(id);
    expect(e?.running).toBe(true);
    expect(e?.createdAt).toBe(new Date(now - 1000).toISOString());
    expect(e?.lastActiveAt).toBe(new Date(now).toISOString());
  });
});

describe("growth bound", () => {
  it(`drops entries not seen for REGISTRY_TTL_HOURS (default ${DEFAULT_TTL_HOURS})`, async () => {
    const stale = freshID();
    const fresh = freshID();
    const now = Date.now();
    await registry().note([note(stale, now - (DEFAULT_TTL_HOURS + 1) * HOUR), note(fresh, now - (DEFAULT_TTL_HOURS - 1) * HOUR)], 0, Number.MAX_SAFE_INTEGER);
    const ids = (await list()).map((e) => e.id);
    expect(ids).toContain(fresh);
    expect(ids).not.toContain(stale);
    // and the row is gone from storage, not only hidden
    expect(((await list({ REGISTRY_TTL_HOURS: "100000" })).map((e) => e.id))).not.toContain(stale);
  });

  it("reads REGISTRY_TTL_HOURS from the environment", async () => {
    const id = freshID();
    const now = Date.now();
    await registry().note([note(id, now - 2 * HOUR)], 0, Number.MAX_SAFE_INTEGER);
    expect(await entry(id, { REGISTRY_TTL_HOURS: "3" })).toBeDefined();
    expect(await entry(id, { REGISTRY_TTL_HOURS: "1" })).toBeUndefined();
  });

  it("prunes on write too, and a request renews an entry", async () => {
    const old = freshID();
    const now = Date.now();
    await registry().note([note(old, now - 10 * HOUR)], 0, Number.MAX_SAFE_INTEGER);
    await call(`/v1/sandbox/${old}/processes`, {}, { REGISTRY_TTL_HOURS: "1" }); // seen again: renewed
    expect(await entry(old, { REGISTRY_TTL_HOURS: "1" })).toBeDefined();
    const gone = freshID();
    await registry().note([note(gone, now - 10 * HOUR)], 0, Number.MAX_SAFE_INTEGER);
    await call(`/v1/sandbox/${freshID()}/processes`, {}, { REGISTRY_TTL_HOURS: "1" }); // a write with a 1 h TTL
    const ids = (await list({ REGISTRY_TTL_HOURS: "100000" })).map((e) => e.id);
    expect(ids).not.toContain(gone);
  });

  it(`keeps at most ${MAX_ENTRIES} entries, dropping the least recently seen`, async () => {
    const now = Date.now();
    const flood: Observation[] = [];
    for (let i = 0; i < MAX_ENTRIES + 5; i++) {
      flood.push(note(`flood${b32(i)}`, now - (MAX_ENTRIES + 5 - i)));
    }
    await registry().note(flood, now, DEFAULT_TTL_HOURS * HOUR);
    const ids = new Set((await list()).map((e) => e.id));
    expect(ids.size).toBe(MAX_ENTRIES);
    for (let i = 0; i < 5; i++) expect(ids.has(flood[i].id)).toBe(false);
    expect(ids.has(flood[flood.length - 1].id)).toBe(true);
  });
});

describe("a failing registry never fails or delays the bridge", () => {
  it("answers every route unchanged when the registry's storage throws", async () => {
    const broken = { SandboxRegistry: env.BrokenRegistry as never };
    const created = await call("/v1/sandbox", { method: "POST" }, broken);
    expect(created.status).toBe(200);
    expect((await created.json<{ id: string }>()).id).toMatch(/^[a-z2-7]+$/);
    const id = freshID();
    const exec = await call(`/v1/sandbox/${id}/exec`, { method: "POST", body: "{}" }, broken);
    expect(exec.status).toBe(200);
    expect(await exec.text()).toContain("event: exit");
    expect((await call(`/v1/sandbox/${id}/running`, {}, broken)).status).toBe(200);
    expect((await call(`/v1/sandbox/${id}`, { method: "DELETE" }, broken)).status).toBe(204);
  });

  it("answers when the binding itself throws", async () => {
    const throwing = { idFromName() { throw new Error("no such namespace"); }, get() { throw new Error("no such namespace"); } };
    const res = await call("/v1/sandbox", { method: "POST" }, { SandboxRegistry: throwing as never });
    expect(res.status).toBe(200);
  });

  it("does not wait for a slow registry", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => { release = r; });
    let writes = 0;
    const slow = {
      idFromName: () => ({}),
      get: () => ({ note: async () => { writes++; await held; } }),
    };
    const ctx = createExecutionContext();
    const res = await Promise.race([
      worker.fetch(rq(`${BASE}/v1/sandbox`, { method: "POST", headers: AUTH }), { ...env, SandboxRegistry: slow as never }, ctx),
      new Promise<"late">((r) => setTimeout(() => r("late"), 2000)),
    ]);
    expect(res).not.toBe("late");
    expect((res as Response).status).toBe(200);
    expect(((await (res as Response).json()) as { id: string }).id).toMatch(/^[a-z2-7]+$/);
    await new Promise((r) => setTimeout(r, 10));
    expect(writes).toBe(1); // the write was started, and is still held
    release();
    await waitOnExecutionContext(ctx);
  });
});

describe("OpenAPI document", () => {
  it("announces the route as a sandscope extension, keeping the bridge's document", async () => {
    const res = await call("/v1/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);
    const doc = await res.json<typeof STUB_DOCUMENT & { paths: Record<string, any>; components: Record<string, any> }>();
    for (const p of Object.keys(STUB_DOCUMENT.paths)) expect(doc.paths[p]).toEqual((STUB_DOCUMENT.paths as Record<string, unknown>)[p]);
    const item = doc.paths["/v1/x-sandscope/sandboxes"];
    expect(item["x-sandscope-extension"]).toBe(true);
    expect(item.get.operationId).toBe("listSandboxes");
    expect(item.get["x-sandscope-extension"]).toBe(true);
    expect(item.get.responses["401"]).toEqual({ $ref: "#/components/responses/Unauthorized" });
    expect(doc.components.responses.Unauthorized).toBeDefined();
    expect(doc.components.schemas.SandscopeSandboxEntry.required).toEqual(
      ["id", "running", "processes", "terminals", "createdAt", "lastActiveAt", "createdBy"]);
  });

  it("leaves the bridge's 401 for the document alone", async () => {
    const ctx = createExecutionContext();
    const res = await worker.fetch(rq(BASE + "/v1/openapi.json"), env, ctx);
    expect(res.status).toBe(401);
    expect(await res.text()).toBe('{"error":"Unauthorized","code":"unauthorized"}');
  });
});

describe("REGISTRY=off", () => {
  it("writes nothing, serves no list route and announces none", async () => {
    let touched = 0;
    const spy = { idFromName: () => { touched++; return {}; }, get: () => { touched++; return {}; } };
    const off = { REGISTRY: "off", SandboxRegistry: spy as never };
    expect((await call("/v1/sandbox", { method: "POST" }, off)).status).toBe(200);
    expect((await call(`/v1/sandbox/${freshID()}/processes`, { method: "POST", body: "{}" }, off)).status).toBe(200);
    const route = await call("/v1/x-sandscope/sandboxes", {}, off);
    expect(route.status).toBe(404);
    const doc = await (await call("/v1/openapi.json", {}, off)).json<{ paths: Record<string, unknown> }>();
    expect(doc).toEqual(STUB_DOCUMENT);
    expect(touched).toBe(0);
  });
});

describe("allocating routes", () => {
  it("preview: the bridge's allocate-mode routes, not its lookups", () => {
    for (const [m, r] of [["POST", "/processes"], ["POST", "/terminals"], ["POST", "/persist"], ["POST", "/hydrate"], ["POST", "/mount"],
      ["POST", "/unmount"], ["GET", "/file/workspace/a"], ["PUT", "/file/workspace/a"], ["POST", "/tunnel/8080"], ["DELETE", "/tunnel/8080"]]) {
      expect(previewAllocates(m, r), `${m} ${r}`).toBe(true);
    }
    for (const [m, r] of [["GET", "/running"], ["GET", "/processes"], ["GET", "/processes/p1"], ["GET", "/processes/p1/logs"],
      ["POST", "/processes/p1/kill"], ["GET", "/terminals"], ["GET", "/terminals/t1/connect"], ["POST", "/terminals/t1/interrupt"], ["DELETE", ""]]) {
      expect(previewAllocates(m, r), `${m} ${r}`).toBe(false);
    }
  });

  it("stable: every route under a sandbox", () => {
    for (const [m, r] of [["POST", "/exec"], ["GET", "/running"], ["GET", "/pty"], ["POST", "/session"], ["GET", "/file/workspace/a"]]) {
      expect(stableAllocates(m, r), `${m} ${r}`).toBe(true);
    }
    expect(stableAllocates("DELETE", "")).toBe(false);
  });
});
