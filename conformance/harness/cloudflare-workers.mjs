// Stand-in for the Workers runtime module "cloudflare:workers": just enough for the bridge bundle
// and its dependencies to load in Node. The bridge only extends these classes (its Durable Objects
// are never instantiated here: requests reach the fake namespaces in run.mjs instead).
export class DurableObject {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
  }
}

export class RpcTarget {}

export class WorkerEntrypoint {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
  }
}

// Module-level bindings; the bridge only reads them at bridge() time to warn about missing
// bindings. run.mjs fills them before calling bridge().
export const env = {};

// The Workers tracing API (custom spans); the stable bridge falls back to plain handlers when it is
// unavailable, which has no effect on the wire.
export const tracing = undefined;
