// Package openapicheck validates the local bridge's answers against OpenAPI documents with
// libopenapi-validator: every route of the preview dialect against the published preview document
// (extensions against the document the bridge serves), and the stable dialect's extensions against
// its served document. It holds only tests.
//
// They live outside package localbridge's tests because the bridge starts each process through
// its own executable run again, which in a test binary is the test binary: every package
// initialisation it links runs again per launch, and the validator's (libopenapi, jsonschema)
// cost about 14 ms of each launch in package localbridge's tests and benchmarks.
package openapicheck
