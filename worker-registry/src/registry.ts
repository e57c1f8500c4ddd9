// The sandbox registry both sandscope bridge Worker templates wrap around the package's bridge().
//
// Neither bridge dialect can list sandboxes: a sandbox is any valid ID a client chose or minted, so
// the Worker is the only place that sees them all. withRegistry() notes every sandbox ID that a
// successful request created or addressed (first seen, last seen, last known running state, the
// request that first named it) in one Durable Object with SQLite storage, and serves that list at
// GET {apiPrefix}/x-sandscope/sandboxes in the local bridge's list shape (client.SandboxInfo in
// sandscope), announced in {apiPrefix}/openapi.json as a sandscope extension.
//
// What it must never do: delay or fail the bridge's own answer. Every registry write runs in
// ctx.waitUntil after the response is in hand, and its errors are logged and dropped. It never
// sends a request to a sandbox (on stable every such request starts a container).
import { DurableObject } from "cloudflare:workers";

/** The list route, under the bridge's API prefix. */
export const LIST_ROUTE = "/x-sandscope/sandboxes";

/** Entries not seen for this long are dropped (REGISTRY_TTL_HOURS overrides it). */
export const DEFAULT_TTL_HOURS = 168;

/** The most entries kept; past it the least recently seen go first (a flood of made-up IDs stays bounded). */
export const MAX_ENTRIES = 10_000;

/** The environment the registry reads; the templates' Env has these beside the bridge's own. */
export interface RegistryEnv {
  /** The bridge's key: the list route wants it exactly as the bridge's own routes do. */
  SANDBOX_API_KEY?: string;
  /** "off" turns the registry off: no writes, no list route, nothing added to the document. */
  REGISTRY?: string;
  /** Hours an entry is kept after it was last seen (default 168). */
  REGISTRY_TTL_HOURS?: string;
  /** The registry's Durable Object namespace (one object, named "registry"). */
  SandboxRegistry?: DurableObjectNamespace<SandboxRegistry>;
}

/** The request that first named a sandbox: method, path (no query) and User-Agent. */
export interface RequestNote {
  method: string;
  path: string;
  userAgent: string;
}

/** One thing a successful request told about a sandbox. */
export interface Observation {
  id: string;
  /** Milliseconds since the epoch, when the bridge answered. */
  at: number;
  /** "deleted": the bridge's own DELETE succeeded; "seen": created or addressed. */
  kind: "seen" | "deleted";
  /** What the answer says about the container; undefined when it says nothing. */
  running?: boolean;
  request: RequestNote;
}

/**
 * One entry of the list: the local bridge's SandboxInfo fields, in its order, then the registry's
 * own. processes and terminals are 0: the registry counts neither (it never asks a sandbox).
 */
export interface SandboxEntry {
  id: string;
  running: boolean;
  processes: number;
  terminals: number;
  createdAt: string;
  lastActiveAt: string;
  /** When a response last said whether a container was running (absent: never). */
  runningObservedAt?: string;
  /** The request that created the sandbox or first addressed it. */
  createdBy: RequestNote;
}

interface Row extends Record<string, SqlStorageValue> {
  id: string;
  first_seen: number;
  last_seen: number;
  running: number;
  running_at: number | null;
  created_method: string;
  created_path: string;
  created_ua: string;
}

/** The registry's one Durable Object: a table of sandboxes and a table of recent deletes. */
export class SandboxRegistry extends DurableObject<RegistryEnv> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: RegistryEnv) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    // deleted keeps a recent delete so that an observation written after it but taken before it
    // (writes race through waitUntil) does not bring the sandbox back.
    this.sql.exec(`CREATE TABLE IF NOT EXISTS sandboxes (
      id TEXT PRIMARY KEY,
      first_seen INTEGER NOT NULL,
      last_seen INTEGER NOT NULL,
      running INTEGER NOT NULL DEFAULT 0,
      running_at INTEGER,
      created_method TEXT NOT NULL,
      created_path TEXT NOT NULL,
      created_ua TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS sandboxes_last_seen ON sandboxes (last_seen);
    CREATE TABLE IF NOT EXISTS deleted (id TEXT PRIMARY KEY, at INTEGER NOT NULL);`);
  }

  /** Records what requests told; drops what the TTL and the size bound say must go. */
  async note(observations: Observation[], now: number, ttlMs: number): Promise<void> {
    this.ctx.storage.transactionSync(() => {
      for (const o of observations) {
        if (o.kind === "deleted") {
          this.sql.exec("DELETE FROM sandboxes WHERE id = ?", o.id);
          this.sql.exec(
            "INSERT INTO deleted (id, at) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET at = max(at, excluded.at)",
            o.id, o.at);
          continue;
        }
        const gone = this.sql.exec<{ at: number }>("SELECT at FROM deleted WHERE id = ?", o.id).toArray()[0];
        if (gone && gone.at >= o.at) {
          continue;
        }
        if (gone) {
          this.sql.exec("DELETE FROM deleted WHERE id = ?", o.id);
        }
        const running = o.running === undefined ? null : o.running ? 1 : 0;
        const runningAt = o.running === undefined ? null : o.at;
        // The running state is the newest observation's: a write that arrives late keeps the newer one.
        this.sql.exec(
          `INSERT INTO sandboxes (id, first_seen, last_seen, running, running_at, created_method, created_path, created_ua)
           VALUES (?1, ?2, ?2, coalesce(?3, 0), ?4, ?5, ?6, ?7)
           ON CONFLICT (id) DO UPDATE SET
             first_seen = min(first_seen, excluded.first_seen),
             last_seen = max(last_seen, excluded.last_seen),
             running = CASE WHEN ?3 IS NOT NULL AND (running_at IS NULL OR ?4 >= running_at) THEN ?3 ELSE running END,
             running_at = CASE WHEN ?3 IS NOT NULL AND (running_at IS NULL OR ?4 >= running_at) THEN ?4 ELSE running_at END`,
          o.id, o.at, running, runningAt, o.request.method, o.request.path, o.request.userAgent);
      }
      this.prune(now, ttlMs);
    });
  }

  /** Every entry seen within the TTL, sorted by ID (as the local bridge lists them). */
  async list(now: number, ttlMs: number): Promise<SandboxEntry[]> {
    this.prune(now, ttlMs);
    return this.sql.exec<Row>("SELECT * FROM sandboxes ORDER BY id").toArray().map(toEntry);
  }

  private prune(now: number, ttlMs: number): void {
    const cutoff = now - ttlMs;
    this.sql.exec("DELETE FROM sandboxes WHERE last_seen < ?", cutoff);
    this.sql.exec("DELETE FROM deleted WHERE at < ?", cutoff);
    this.sql.exec(
      "DELETE FROM sandboxes WHERE id IN (SELECT id FROM sandboxes ORDER BY last_seen DESC, id LIMIT -1 OFFSET ?)",
      MAX_ENTRIES);
    this.sql.exec(
      "DELETE FROM deleted WHERE id IN (SELECT id FROM deleted ORDER BY at DESC, id LIMIT -1 OFFSET ?)",
      MAX_ENTRIES);
  }
}

function toEntry(r: Row): SandboxEntry {
  // Field order is the local bridge's list order, then the registry's own fields.
  return {
    id: r.id,
    running: r.running === 1,
    processes: 0,
    terminals: 0,
    createdAt: new Date(r.first_seen).toISOString(),
    lastActiveAt: new Date(r.last_seen).toISOString(),
    ...(r.running_at === null ? {} : { runningObservedAt: new Date(r.running_at).toISOString() }),
    createdBy: { method: r.created_method, path: r.created_path, userAgent: r.created_ua },
  };
}

/**
 * Which successful sandbox requests mean a container is running afterwards: the ones the bridge
 * allocates a container for. method is upper case; rest is the path after /sandbox/{id} ("" for
 * the sandbox itself).
 */
export type Allocates = (method: string, rest: string) => boolean;

/** Stable 0.12: every /sandbox/{id}/… route asks the warm pool for a container first. */
export const stableAllocates: Allocates = (_method, rest) => rest !== "";

/**
 * 1.0 preview: the routes the bridge's pool middleware puts in "allocate" mode; the lookup routes
 * (running, process and terminal reads, kill, interrupt, terminate) leave the state as it was.
 */
export const previewAllocates: Allocates = (method, rest) => {
  if (method === "POST" && ["/processes", "/terminals", "/persist", "/hydrate", "/mount", "/unmount"].includes(rest)) {
    return true;
  }
  if ((method === "GET" || method === "PUT") && rest.startsWith("/file/")) {
    return true;
  }
  return (method === "POST" || method === "DELETE") && /^\/tunnel\/[^/]+$/.test(rest);
};

export interface RegistryOptions {
  /** The dialect's allocating routes: stableAllocates or previewAllocates. */
  allocates: Allocates;
  /** The bridge's apiRoutePrefix (default "/v1"). */
  apiPrefix?: string;
}

// The fetch of an exported handler (bridge() returns one), whatever its Env.
type FetchHandler = ExportedHandlerFetchHandler<any>;

// The bridges' own sandbox ID syntax: anything else never reached a sandbox route.
const SANDBOX_ID = /^[a-z2-7]{1,128}$/;
const MAX_USER_AGENT = 256;

/**
 * Wraps the bridge's exported handler: serves the list route, announces it in the OpenAPI
 * document, and notes what each successful sandbox request said. Everything else the handler
 * exports (scheduled, …) is passed through.
 */
export function withRegistry<H extends { fetch?: FetchHandler }>(inner: H, options: RegistryOptions): H & { fetch: FetchHandler } {
  const prefix = options.apiPrefix ?? "/v1";
  const listPath = prefix + LIST_ROUTE;
  const passOn = async (request: Request<unknown, IncomingRequestCfProperties>, env: RegistryEnv, ctx: ExecutionContext): Promise<Response> =>
    inner.fetch ? inner.fetch(request, env, ctx) : new Response("Not Found", { status: 404 });

  return {
    ...inner,
    async fetch(request: Request<unknown, IncomingRequestCfProperties>, env: RegistryEnv, ctx: ExecutionContext): Promise<Response> {
      if (!registryOn(env)) {
        return passOn(request, env, ctx);
      }
      const url = new URL(request.url);
      if (url.pathname === listPath && request.method === "GET") {
        return serveList(request, env);
      }
      const response = await passOn(request, env, ctx);
      if (url.pathname === prefix + "/openapi.json" && request.method === "GET" && response.status === 200) {
        return announce(response, prefix);
      }
      try {
        const pending = observe(request, url, response, prefix, options.allocates);
        if (pending) {
          ctx.waitUntil(pending.then((obs) => write(env, obs)).catch(logDropped));
        }
      } catch (err) {
        logDropped(err);
      }
      return response;
    },
  };
}

function registryOn(env: RegistryEnv): boolean {
  return (env.REGISTRY ?? "").trim().toLowerCase() !== "off" && env.SandboxRegistry !== undefined;
}

function ttlMs(env: RegistryEnv): number {
  const hours = Number(env.REGISTRY_TTL_HOURS ?? "");
  return (Number.isFinite(hours) && hours > 0 ? hours : DEFAULT_TTL_HOURS) * 3_600_000;
}

function registryStub(env: RegistryEnv): DurableObjectStub<SandboxRegistry> {
  const ns = env.SandboxRegistry!;
  return ns.get(ns.idFromName("registry"));
}

async function write(env: RegistryEnv, observations: Observation[]): Promise<void> {
  if (observations.length > 0) {
    await registryStub(env).note(observations, Date.now(), ttlMs(env));
  }
}

function logDropped(err: unknown): void {
  console.error({
    message: "sandbox registry: observation dropped",
    component: "sandscope-registry",
    error: err instanceof Error ? err.message : String(err),
  });
}

// errorJson is the bridge's error body: {"error","code"} as application/json.
function errorJson(error: string, code: string, status: number): Response {
  return new Response(JSON.stringify({ error, code }), { status, headers: { "Content-Type": "application/json" } });
}

/** The bridge's bearer check (header "Bearer <key>", scheme in any case), compared in constant time. */
async function authorized(request: Request, env: RegistryEnv): Promise<boolean> {
  const token = env.SANDBOX_API_KEY;
  if (!token) {
    return true;
  }
  const header = request.headers.get("Authorization") ?? "";
  const provided = header.toLowerCase().startsWith("bearer ") ? header.slice(7) : "";
  const enc = new TextEncoder();
  const [a, b] = await Promise.all([
    crypto.subtle.digest("SHA-256", enc.encode(provided)),
    crypto.subtle.digest("SHA-256", enc.encode(token)),
  ]);
  return crypto.subtle.timingSafeEqual(a, b);
}

async function serveList(request: Request, env: RegistryEnv): Promise<Response> {
  if (!(await authorized(request, env))) {
    return errorJson("Unauthorized", "unauthorized", 401);
  }
  try {
    const entries = await registryStub(env).list(Date.now(), ttlMs(env));
    return Response.json(entries);
  } catch (err) {
    console.error({
      message: "sandbox registry: list failed",
      component: "sandscope-registry",
      error: err instanceof Error ? err.message : String(err),
    });
    return errorJson("sandbox registry unavailable", "registry_unavailable", 503);
  }
}

/**
 * What a response says about sandboxes, or undefined when it says nothing. A body is read only
 * where it is small JSON (the create route's ID, the running route's answer), from a clone, inside
 * waitUntil; streams and WebSocket upgrades are never cloned.
 */
function observe(request: Request, url: URL, response: Response, prefix: string, allocates: Allocates): Promise<Observation[]> | undefined {
  const ok = (response.status >= 200 && response.status < 300) || response.status === 101;
  if (!ok) {
    return undefined;
  }
  const method = request.method.toUpperCase();
  const note: RequestNote = {
    method,
    path: url.pathname,
    userAgent: (request.headers.get("User-Agent") ?? "").slice(0, MAX_USER_AGENT),
  };
  const at = Date.now();
  const sandboxes = prefix + "/sandbox";
  if (url.pathname === sandboxes) {
    if (method !== "POST") {
      return undefined;
    }
    // A minted ID: no container yet.
    return response.clone().json<{ id?: unknown }>().then((body) =>
      typeof body.id === "string" && SANDBOX_ID.test(body.id)
        ? [{ id: body.id, at, kind: "seen", running: false, request: note }]
        : []);
  }
  if (!url.pathname.startsWith(sandboxes + "/")) {
    return undefined;
  }
  const tail = url.pathname.slice(sandboxes.length + 1);
  const slash = tail.indexOf("/");
  const id = slash < 0 ? tail : tail.slice(0, slash);
  const rest = slash < 0 ? "" : tail.slice(slash);
  if (!SANDBOX_ID.test(id)) {
    return undefined;
  }
  if (rest === "" && method === "DELETE") {
    return Promise.resolve([{ id, at, kind: "deleted", request: note }]);
  }
  if (rest === "/running" && method === "GET" && response.status === 200) {
    return response.clone().json<{ running?: unknown }>().then((body) =>
      [{ id, at, kind: "seen", running: typeof body.running === "boolean" ? body.running : undefined, request: note }]);
  }
  return Promise.resolve([{ id, at, kind: "seen", running: allocates(method, rest) ? true : undefined, request: note }]);
}

/** The OpenAPI document with the list route added: sandscope finds it by its extension marker. */
async function announce(response: Response, prefix: string): Promise<Response> {
  const text = await response.text();
  const headers = new Headers(response.headers);
  headers.delete("Content-Length");
  let doc: { paths?: Record<string, unknown>; components?: { schemas?: Record<string, unknown> } };
  try {
    doc = JSON.parse(text);
  } catch (err) {
    logDropped(err);
    return new Response(text, { status: response.status, statusText: response.statusText, headers });
  }
  if (typeof doc !== "object" || doc === null) {
    return new Response(text, { status: response.status, statusText: response.statusText, headers });
  }
  doc.paths ??= {};
  doc.components ??= {};
  doc.components.schemas ??= {};
  doc.components.schemas["SandscopeSandboxEntry"] = ENTRY_SCHEMA;
  doc.paths[prefix + LIST_ROUTE] = {
    "x-sandscope-extension": true,
    get: {
      operationId: "listSandboxes",
      "x-sandscope-extension": true,
      summary: "List every sandbox this Worker saw a successful request create or address (sandscope registry)",
      description:
        "Kept by the Worker's sandbox registry, not by the bridge: entries not seen for REGISTRY_TTL_HOURS " +
        "(default 168) are dropped, and a successful DELETE of the sandbox removes its entry. running is the " +
        "last state a response showed; processes and terminals are not counted (0). Sends no request to any sandbox.",
      security: [{ BearerAuth: [] }],
      responses: {
        "200": {
          description: "Sandboxes, sorted by ID.",
          content: { "application/json": { schema: { type: "array", items: { $ref: "#/components/schemas/SandscopeSandboxEntry" } } } },
        },
        "401": { $ref: "#/components/responses/Unauthorized" },
        "503": { description: "The registry's storage did not answer." },
      },
    },
  };
  return new Response(JSON.stringify(doc), { status: response.status, statusText: response.statusText, headers });
}

const ISO = { type: "string", format: "date-time" };
const REQUEST_NOTE = {
  type: "object",
  required: ["method", "path", "userAgent"],
  properties: { method: { type: "string" }, path: { type: "string" }, userAgent: { type: "string" } },
};
const ENTRY_SCHEMA = {
  type: "object",
  "x-sandscope-extension": true,
  required: ["id", "running", "processes", "terminals", "createdAt", "lastActiveAt", "createdBy"],
  properties: {
    id: { type: "string", pattern: "^[a-z2-7]{1,128}$" },
    running: { type: "boolean", description: "The last running state a response showed." },
    processes: { type: "integer", description: "Always 0: the registry does not count processes." },
    terminals: { type: "integer", description: "Always 0: the registry does not count terminals." },
    createdAt: { ...ISO, description: "First seen." },
    lastActiveAt: { ...ISO, description: "Last seen in a successful request." },
    runningObservedAt: { ...ISO, description: "When a response last showed the running state." },
    createdBy: { ...REQUEST_NOTE, description: "The request that created the sandbox or first addressed it." },
  },
};
