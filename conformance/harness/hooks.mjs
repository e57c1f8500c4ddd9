// Module resolution hooks for loading Workers code in Node:
//   - "cloudflare:workers", which only exists inside workerd, maps to the stand-in beside this file;
//   - relative imports without a file extension (bundler style, as in @cloudflare/containers) are
//     retried with ".js" and "/index.js", as wrangler's bundler would resolve them.
const standIn = new URL("./cloudflare-workers.mjs", import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if (specifier === "cloudflare:workers") {
    return { url: standIn, shortCircuit: true };
  }
  try {
    return await nextResolve(specifier, context);
  } catch (err) {
    const relative = specifier.startsWith("./") || specifier.startsWith("../");
    if (!relative || err?.code !== "ERR_MODULE_NOT_FOUND") throw err;
    for (const suffix of [".js", "/index.js"]) {
      try {
        return await nextResolve(specifier + suffix, context);
      } catch {
        // try the next spelling
      }
    }
    throw err;
  }
}
