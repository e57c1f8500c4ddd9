// The test Worker's bindings (test/wrangler.jsonc), as cloudflare:workers' env sees them.
declare namespace Cloudflare {
  interface Env {
    SANDBOX_API_KEY?: string;
    REGISTRY?: string;
    REGISTRY_TTL_HOURS?: string;
    SandboxRegistry?: DurableObjectNamespace<import("../src/registry").SandboxRegistry>;
    BrokenRegistry: DurableObjectNamespace<import("./worker").BrokenRegistry>;
  }
}
