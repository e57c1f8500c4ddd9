// Differential conformance harness: loads the published bridge request handler from the installed
// @cloudflare/sandbox package, backs it with fake Durable Object namespaces driven by a script, and
// answers a table of HTTP requests.
//
// stdin:  {"token": "...", "script": {...}, "requests": [{"name","method","path","headers","body"}]}
// stdout: {"responses": [{"name","status","contentType","cacheControl","body","bodyError"}]}
//
// The script describes what the fake container knows (see conformance/doc.go): which sandbox IDs have
// a container assignment, the processes (status + log events) and terminals of the scripted
// sandbox, and what a new process or terminal looks like. Nothing here reimplements bridge
// behaviour: routing, auth, validation, error mapping and SSE framing all come from the package.
import { register } from "node:module";

register("./hooks.mjs", import.meta.url);

const workers = await import("cloudflare:workers");
const { bridge } = await import("@cloudflare/sandbox/bridge");

const input = JSON.parse(await readStdin());
const script = input.script ?? {};

// Errors carrying an SDK error code, as the container would raise them over RPC.
function sdkError(code, message) {
  const err = new Error(message);
  err.code = code;
  return err;
}

// ---- the fake WarmPool: a fixed, deterministic UUID per assigned sandbox ID ----
const assignments = new Map();
let uuidCounter = 0;
function nextUUID() {
  uuidCounter += 1;
  return `00000000-0000-4000-8000-${String(uuidCounter).padStart(12, "0")}`;
}
for (const id of script.assigned ?? []) assignments.set(id, nextUUID());
const scriptedUUID = script.assigned?.length ? assignments.get(script.assigned[0]) : undefined;

const warmPool = {
  async configure() {},
  async getContainer(sandboxId) {
    if (script.poolError) throw new Error(script.poolError);
    if (!assignments.has(sandboxId)) assignments.set(sandboxId, nextUUID());
    return assignments.get(sandboxId);
  },
  async lookupContainer(sandboxId) {
    if (script.poolError) throw new Error(script.poolError);
    return assignments.get(sandboxId) ?? null;
  },
  async reportStopped(uuid) {
    for (const [id, u] of assignments) if (u === uuid) assignments.delete(id);
  },
  async getStats() {
    return {
      warm: 0,
      assigned: assignments.size,
      total: assignments.size,
      config: { warmTarget: 0, refreshInterval: 10000 },
      maxInstances: null,
    };
  },
  async shutdownPrewarmed() {},
};

// ---- the fake Sandbox Durable Object: one runtime per container UUID ----
const runtimes = new Map();
function runtimeFor(uuid) {
  if (!runtimes.has(uuid)) {
    const scripted = uuid === scriptedUUID;
    runtimes.set(uuid, {
      processes: scripted ? (script.processes ?? []) : [],
      terminals: scripted ? (script.terminals ?? []) : [],
    });
  }
  return runtimes.get(uuid);
}

function decodeEvent(ev) {
  if (ev.type === "stdout" || ev.type === "stderr") {
    return { ...ev, data: Uint8Array.from(Buffer.from(ev.data, "base64")) };
  }
  return { ...ev };
}

// openLogs follows the sequenced byte log's documented rules over the scripted events: since must be
// a cursor of this log (anything else, "" included, is INVALID_PROCESS_CURSOR), replay/follow pick
// backlog and live parts, a finished process never waits.
function openLogs(proc, opts) {
  const events = proc.events ?? [];
  let start = 0;
  if (opts.since !== undefined) {
    const at = events.findIndex((e) => e.cursor !== undefined && e.cursor === opts.since);
    if (at < 0) return Promise.reject(sdkError("INVALID_PROCESS_CURSOR", "Invalid byte log cursor"));
    start = at + 1;
  }
  const replay = opts.replay ?? true; // container defaults: replay=true, follow=false
  const queue = replay ? events.slice(start).map(decodeEvent) : [];
  const endWith = proc.streamEnd; // "abort": the body errors after the backlog
  let i = 0;
  const sub = {
    async next() {
      if (i < queue.length) return { done: false, value: queue[i++] };
      if (endWith === "abort") throw sdkError("RPC_TRANSPORT_ERROR", "control connection lost");
      return { done: true, value: undefined };
    },
    async cancel() {},
    [Symbol.dispose]() {},
  };
  return Promise.resolve(sub);
}

function processDescriptor(proc) {
  return {
    id: proc.status.id,
    pid: proc.status.pid,
    capability: {
      status: async () => proc.status,
      openLogs: (opts) => openLogs(proc, opts ?? {}),
      kill: async () => {
        if (proc.status.state === "error") throw sdkError("PROCESS_ERROR", "process is in error state");
      },
      openPortWatch: () => Promise.reject(new Error("not scripted")),
    },
  };
}

function terminalDescriptor(snapshot) {
  return {
    snapshot,
    runtimeIncarnationID: "00000000-0000-4000-8000-ffffffffffff",
    capability: {
      getSnapshot: async () => snapshot,
      openOutput: () => Promise.reject(new Error("not scripted")),
      write: async () => {},
      resize: async () => {},
      interrupt: async () => {},
      terminate: async () => {},
      authorizeConnection: async () => "token",
    },
  };
}

function sandboxStub(uuid) {
  const rt = runtimeFor(uuid);
  return {
    async setSandboxName() {},
    async setSleepAfter() {},
    async setKeepAlive() {},
    async setContainerTimeouts() {},
    async isRuntimeActive() {
      return true;
    },
    async exec(argv, options) {
      if (!script.exec) throw new Error("exec not scripted");
      const status = { ...script.exec, command: argv, cwd: options?.cwd ?? "/workspace" };
      const proc = { status, events: [] };
      rt.processes.push(proc);
      return processDescriptor(proc);
    },
    async getProcess(id) {
      const proc = rt.processes.find((p) => p.status.id === id);
      return proc ? processDescriptor(proc) : null;
    },
    async listProcesses() {
      return rt.processes.map((p) => p.status);
    },
    async createTerminal(options) {
      if (!script.createTerminal) throw new Error("terminal not scripted");
      const snap = { ...script.createTerminal, command: options.command, cwd: options.cwd ?? "/workspace" };
      rt.terminals.push(snap);
      return terminalDescriptor(snap);
    },
    async getTerminal(id) {
      const snap = rt.terminals.find((t) => t.id === id);
      return snap ? terminalDescriptor(snap) : null;
    },
    async listTerminals() {
      return rt.terminals.map(terminalDescriptor);
    },
    async destroy() {
      runtimes.delete(uuid);
    },
    async fetch() {
      return new Response("not scripted", { status: 503 });
    },
  };
}

function namespace(make) {
  return {
    idFromName(name) {
      return { name, toString: () => name };
    },
    get(id) {
      return make(id.name);
    },
  };
}

const env = {
  Sandbox: namespace((name) => sandboxStub(name)),
  WarmPool: namespace(() => warmPool),
};
if (input.token) env.SANDBOX_API_KEY = input.token;
Object.assign(workers.env, env);

// The bridge warns on the console; keep stdout for the answer only.
console.warn = () => {};
console.error = () => {};
console.log = () => {};

const worker = bridge({});
const ctx = { waitUntil() {}, passThroughOnException() {} };

const responses = [];
for (const req of input.requests ?? []) {
  responses.push(await answer(req));
}
process.stdout.write(JSON.stringify({ responses }));

async function answer(req) {
  const init = { method: req.method ?? "GET", headers: req.headers ?? {} };
  if (req.body !== undefined && init.method !== "GET" && init.method !== "HEAD") init.body = req.body;
  const out = { name: req.name, status: 0, contentType: "", cacheControl: "", body: "", bodyError: false };
  let res;
  try {
    const request = new Request(`http://bridge.test${req.path}`, init);
    // A string body makes the Request add "text/plain;charset=UTF-8"; on the wire a client sends
    // only the headers it chose, and the bridge branches on Content-Type being absent (kill).
    const chosen = Object.keys(init.headers).some((h) => h.toLowerCase() === "content-type");
    if (!chosen) request.headers.delete("content-type");
    res = await worker.fetch(request, env, ctx);
  } catch (err) {
    // The Workers runtime turns an exception escaping fetch into a bare 500.
    out.status = 500;
    out.body = `harness: fetch threw: ${err?.message ?? err}`;
    return out;
  }
  out.status = res.status;
  out.contentType = res.headers.get("content-type") ?? "";
  out.cacheControl = res.headers.get("cache-control") ?? "";
  if (res.body) {
    const chunks = [];
    const reader = res.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(Buffer.from(value));
      }
    } catch {
      out.bodyError = true;
    }
    out.body = Buffer.concat(chunks).toString("utf8");
  }
  return out;
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}
