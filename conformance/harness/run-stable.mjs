// Differential conformance harness, stable dialect: loads the published stable bridge request
// handler (@cloudflare/sandbox@0.12.10, installed under the alias @cloudflare/sandbox-stable),
// backs it with fake Durable Object namespaces driven by a script, and answers a table of HTTP
// requests.
//
// stdin:  {"token": "...", "script": {...}, "requests": [{"name","method","path","headers","body"}]}
// stdout: {"responses": [...], "commands": [{"command","session","cwd"}], "allocations": {id: n}}
//
// The script says what the fake container does:
//   execs:    one entry per streaming exec call, in call order: {"output": [{"stream","text"}],
//             "end": {"exitCode": n} | {"noExitCode": true} | {"error": "msg"} | {"reject": "msg"}}
//   sessions: session IDs that already exist;
//   files:    {"/workspace/path": "<base64 content>"} (anything else is a missing file).
// Routing, auth, validation, argv quoting, error mapping and SSE framing all come from the package;
// the fake only stands in for the container. "commands" is what the bridge asked the container
// to run; "allocations" counts the pool's getContainer calls per sandbox ID. The pool is the
// package's WarmPool (see HarnessPool).
import { register } from "node:module";

register("./hooks.mjs", import.meta.url);

const workers = await import("cloudflare:workers");
const { bridge, WarmPool } = await import("@cloudflare/sandbox-stable/bridge");

const input = JSON.parse(await readStdin());
const script = input.script ?? {};
const DISABLE = "__DISABLE_SESSION__";

const allocations = {};
let uuidCounter = 0;
function nextUUID() {
  uuidCounter += 1;
  return `00000000-0000-4000-8000-${String(uuidCounter).padStart(12, "0")}`;
}

// The pool is the package's own WarmPool Durable Object (its assignment bookkeeping, configure()
// and getStats(), so /v1/pool/* answer with the real shapes and key order), over an in-memory
// storage; only starting a container and asking one whether it runs are faked: a started
// container gets the next fixed UUID and keeps running until the pool releases it.
class FakeStorage {
  constructor() {
    this.data = new Map();
    this.alarm = null;
  }
  async get(key) {
    return this.data.get(key);
  }
  async put(key, value) {
    this.data.set(key, value);
  }
  async delete(key) {
    return this.data.delete(key);
  }
  async getAlarm() {
    return this.alarm;
  }
  async setAlarm(t) {
    this.alarm = t;
  }
}

class HarnessPool extends WarmPool {
  async startContainer() {
    return nextUUID();
  }
  async isContainerRunning(uuid) {
    return [...this.assignments.values()].includes(uuid) || this.warmContainers.has(uuid);
  }
  async getContainer(sandboxId) {
    allocations[sandboxId] = (allocations[sandboxId] ?? 0) + 1;
    return super.getContainer(sandboxId);
  }
}
const warmPool = new HarnessPool({ storage: new FakeStorage(), waitUntil() {} }, {});
for (const id of script.assigned ?? []) warmPool.assignments.set(id, nextUUID());
await warmPool.persist();

const commands = [];
const execs = [...(script.execs ?? [])];
const sessions = new Set(script.sessions ?? []);
let lastDefaultMs = 0;

// runExec plays one scripted streaming exec through the SDK's callbacks, as the Durable Object
// does (executeWithStreaming: onOutput per chunk, then onComplete with exitCode ?? 0, or onError).
async function runExec(command, session, opts) {
  commands.push({ command, session, cwd: opts?.cwd ?? null, stream: !!opts?.stream });
  if (!opts?.stream) return { success: true, exitCode: 0, stdout: "", stderr: "" };
  const entry = execs.shift() ?? { output: [], end: { exitCode: 0 } };
  const end = entry.end ?? {};
  if (end.reject !== undefined) throw new Error(end.reject);
  for (const o of entry.output ?? []) opts.onOutput?.(o.stream, o.text);
  if (end.error !== undefined) {
    opts.onError?.(new Error(end.error));
  } else {
    const exitCode = end.noExitCode ? undefined : end.exitCode;
    opts.onComplete?.({ exitCode: exitCode ?? 0 });
  }
  return {};
}

function fileStream(path) {
  const enc = new TextEncoder();
  const content = script.files?.[path];
  const events =
    content === undefined
      ? [{ type: "error", error: `File not found: ${path}` }]
      : [
          { type: "metadata", mimeType: "application/octet-stream", size: Buffer.from(content, "base64").length, isBinary: true, encoding: "base64" },
          { type: "chunk", data: content },
          { type: "complete" },
        ];
  return new ReadableStream({
    start(controller) {
      for (const ev of events) controller.enqueue(enc.encode(`data: ${JSON.stringify(ev)}\n\n`));
      controller.close();
    },
  });
}

function sessionObject(id) {
  return {
    id,
    exec: (command, opts) => runExec(command, id, opts),
    readFileStream: async (path) => fileStream(path),
    writeFile: async () => ({ success: true }),
  };
}

function sandboxStub() {
  return {
    async setSandboxName() {},
    async setSleepAfter() {},
    async setKeepAlive() {},
    async setContainerTimeouts() {},
    async setEnvVars() {},
    async exec(command, opts) {
      return runExec(command, "default", opts);
    },
    async execWithSessionToken(command, token, opts) {
      return runExec(command, token === DISABLE ? null : token, opts);
    },
    async getSession(id) {
      sessions.add(id); // created implicitly by first use
      return sessionObject(id);
    },
    async createSession(opts) {
      // Default IDs are session-<epoch ms>; two made within one millisecond would collide here
      // but not across the real round trips, so the fake waits for the next millisecond.
      let ms = Date.now();
      while (ms <= lastDefaultMs) ms = Date.now();
      if (!opts?.id) lastDefaultMs = ms;
      const id = opts?.id || `session-${ms}`;
      if (id === DISABLE) throw new Error(`Session ID '${DISABLE}' is reserved for internal use`);
      if (sessions.has(id)) throw new Error(`Session '${id}' already exists`);
      sessions.add(id);
      return sessionObject(id);
    },
    async deleteSession(id) {
      if (!sessions.has(id)) throw new Error(`Session '${id}' not found`);
      sessions.delete(id);
      return { success: true, sessionId: id, timestamp: new Date().toISOString() };
    },
    async readFileStream(path) {
      return fileStream(path);
    },
    async writeFile() {
      return { success: true };
    },
    async destroy() {},
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
  Sandbox: namespace(() => sandboxStub()),
  WarmPool: namespace(() => warmPool),
};
if (input.token) env.SANDBOX_API_KEY = input.token;
Object.assign(workers.env, env);

console.warn = () => {};
console.error = () => {};
console.log = () => {};

const worker = bridge({});
const ctx = { waitUntil() {}, passThroughOnException() {} };

const responses = [];
for (const req of input.requests ?? []) {
  responses.push(await answer(req));
}
process.stdout.write(JSON.stringify({ responses, commands, allocations }));

async function answer(req) {
  const init = { method: req.method ?? "GET", headers: req.headers ?? {} };
  if (req.body !== undefined && init.method !== "GET" && init.method !== "HEAD") init.body = req.body;
  const out = { name: req.name, status: 0, contentType: "", cacheControl: "", body: "", bodyError: false };
  let res;
  try {
    const request = new Request(`http://bridge.test${req.path}`, init);
    const chosen = Object.keys(init.headers).some((h) => h.toLowerCase() === "content-type");
    if (!chosen) request.headers.delete("content-type");
    res = await worker.fetch(request, env, ctx);
  } catch (err) {
    out.status = 500;
    out.body = `harness: fetch threw: ${err?.message ?? err}`;
    return out;
  }
  out.status = res.status;
  out.contentType = res.headers.get("content-type") ?? "";
  out.cacheControl = res.headers.get("cache-control") ?? "";
  // A HEAD answer carries no body on the wire (the Workers runtime drops it; Hono already does).
  if (res.body && init.method !== "HEAD") {
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
