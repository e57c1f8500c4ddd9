package localbridge

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

// openapiPreview is the document a 1.0-preview bridge serves at /v1/openapi.json.
//
//go:embed openapi-v1-preview.json
var openapiPreview []byte

const openAPIHTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>Sandbox bridge API (sandscope local bridge)</title></head>
<body><h1>Sandbox bridge API</h1><p>The OpenAPI document is at <a href="/v1/openapi.json">/v1/openapi.json</a>.</p></body></html>
`

// openAPIDocument is the preview document plus the local bridge's extensions, each marked
// "x-sandscope-extension": true: the sandbox list (on ListPath, and on GET /v1/sandbox for older
// sandscope clients), stop and replace, the incarnation fields on
// status JSON, and the 501 answers for what the local bridge does not support; and the bridge's
// identity in info (see announceBridgeID).
func openAPIDocument(bridgeID string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openapiPreview, &doc); err != nil {
		return nil, fmt.Errorf("localbridge: embedded OpenAPI document: %w", err)
	}
	if err := announceBridgeID(doc, bridgeID); err != nil {
		return nil, err
	}
	paths, _ := doc["paths"].(map[string]any)
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	if paths == nil || schemas == nil {
		return nil, fmt.Errorf("localbridge: embedded OpenAPI document has no paths or schemas")
	}
	errRef := map[string]any{"$ref": "#/components/schemas/ErrorResponse"}
	jsonContent := func(schema any) map[string]any {
		return map[string]any{"application/json": map[string]any{"schema": schema}}
	}
	idParam := map[string]any{"name": "id", "in": "path", "required": true,
		"schema": map[string]any{"type": "string"}, "description": "Sandbox instance name."}
	unauthorized := map[string]any{"$ref": "#/components/responses/Unauthorized"}
	incarnation := map[string]any{"type": "integer", "minimum": 1, "x-sandscope-extension": true,
		"description": "Container incarnation of the sandbox (local bridge extension; counts from 1)."}
	incarnationStarted := map[string]any{"type": "string", "format": "date-time", "x-sandscope-extension": true,
		"description": "When the current incarnation (container life) started, RFC 3339 in UTC with nanoseconds " +
			"(local bridge extension; present while running). A bridge restarted over the same root continues " +
			"the numbering, and a different start under the same number is a different container life."}

	schemas["SandboxInfo"] = sandboxInfoSchema()
	if rr, ok := schemas["RunningResponse"].(map[string]any); ok {
		if props, ok := rr["properties"].(map[string]any); ok {
			props["incarnation"] = incarnation
			props["incarnationStarted"] = incarnationStarted
		}
	}
	if ps, ok := schemas["ProcessStatus"].(map[string]any); ok {
		if variants, ok := ps["oneOf"].([]any); ok {
			for _, v := range variants {
				if vm, ok := v.(map[string]any); ok {
					if props, ok := vm["properties"].(map[string]any); ok {
						props["incarnation"] = incarnation
					}
				}
			}
		}
	}
	if sb, ok := paths["/v1/sandbox"].(map[string]any); ok {
		sb["get"] = map[string]any{
			"operationId": "listSandboxesLegacy", "x-sandscope-extension": true, "deprecated": true,
			"summary": "List the sandboxes the local bridge knows (local bridge extension, kept for older sandscope clients; the list's own path is " + ListPath + ")",
			"responses": map[string]any{
				"200": map[string]any{"description": "Sandboxes.", "content": jsonContent(map[string]any{
					"type": "array", "items": map[string]any{"$ref": "#/components/schemas/SandboxInfo"}})},
				"401": unauthorized,
			},
		}
	}
	paths[ListPath] = listPathItem()
	lifecycle := func(op, summary string, ok map[string]any) map[string]any {
		return map[string]any{"post": map[string]any{
			"operationId": op, "x-sandscope-extension": true, "summary": summary,
			"parameters": []any{idParam}, "responses": map[string]any{"400": map[string]any{
				"description": "Invalid sandbox ID.", "content": jsonContent(errRef)}, "401": unauthorized,
				okStatus(ok): ok},
		}, "x-sandscope-extension": true}
	}
	paths["/v1/sandbox/{id}/stop"] = lifecycle("stopSandbox",
		"Stop the sandbox's container as idle sleep would (local bridge extension)",
		map[string]any{"description": "Stopped (also when nothing was running)."})
	paths["/v1/sandbox/{id}/replace"] = lifecycle("replaceSandbox",
		"Replace the sandbox's container with a new incarnation (local bridge extension)",
		map[string]any{"description": "The new incarnation.", "content": jsonContent(map[string]any{"$ref": "#/components/schemas/RunningResponse"})})
	schemas["NotSupportedResponse"] = map[string]any{
		"type": "object", "x-sandscope-extension": true, "required": []any{"error", "code"},
		"properties": map[string]any{"error": map[string]any{"type": "string"},
			"code": map[string]any{"type": "string", "enum": []any{"not_supported"}}},
	}
	notSupported := map[string]any{"description": "Not supported by the local bridge (local bridge extension).",
		"x-sandscope-extension": true, "content": jsonContent(map[string]any{"$ref": "#/components/schemas/NotSupportedResponse"})}
	for _, p := range []string{"/v1/sandbox/{id}/mount", "/v1/sandbox/{id}/unmount", "/v1/sandbox/{id}/tunnel/{port}",
		"/v1/pool/stats", "/v1/pool/prime", "/v1/pool/shutdown-prewarmed"} {
		item, _ := paths[p].(map[string]any)
		for _, op := range item {
			if om, ok := op.(map[string]any); ok {
				if resp, ok := om["responses"].(map[string]any); ok {
					resp["501"] = notSupported
				}
			}
		}
	}
	// Every allocating route may answer 503 capacity_exceeded; the preview document leaves it out
	// for most of them.
	capacity := map[string]any{"description": "Pool capacity exhausted.", "content": jsonContent(errRef)}
	for _, p := range []string{"/v1/sandbox/{id}/processes", "/v1/sandbox/{id}/file/{path}", "/v1/sandbox/{id}/persist",
		"/v1/sandbox/{id}/hydrate", "/v1/sandbox/{id}/terminals"} {
		item, _ := paths[p].(map[string]any)
		for method, op := range item {
			if method != "post" && method != "get" && method != "put" {
				continue
			}
			if om, ok := op.(map[string]any); ok {
				if resp, ok := om["responses"].(map[string]any); ok {
					if _, has := resp["503"]; !has {
						resp["503"] = capacity
					}
				}
			}
		}
	}
	return json.Marshal(doc)
}

// announceBridgeID puts the bridge's persistent identity in the document's info object as
// "x-sandscope-bridge-id" (client.ParseCapabilities reads it).
func announceBridgeID(doc map[string]any, bridgeID string) error {
	info, ok := doc["info"].(map[string]any)
	if !ok {
		return fmt.Errorf("localbridge: embedded OpenAPI document has no info object")
	}
	info["x-sandscope-bridge-id"] = bridgeID
	return nil
}

func okStatus(ok map[string]any) string {
	if _, has := ok["content"]; has {
		return "200"
	}
	return "204"
}

// ListPath is the local bridge's sandbox list (an extension on its own path, in both dialects:
// the published stable bridge has no GET /v1/sandbox, and the local one answers that as it does).
// The OpenAPI document announces it as the GET operation "listSandboxes" marked
// "x-sandscope-extension" (client.Capabilities reads ListPath from there).
const ListPath = "/v1/x-sandscope/sandboxes"

// sandboxInfoSchema describes one entry of the sandbox list.
func sandboxInfoSchema() *object {
	typ := func(t string) *object { return obj("type", t) }
	return obj("type", "object", "x-sandscope-extension", true,
		"required", []string{"id", "running", "processes", "terminals", "createdAt", "lastActiveAt", "allocations"},
		"properties", obj(
			"id", typ("string"),
			"running", typ("boolean"),
			"incarnation", obj("type", "integer", "minimum", 1, "x-sandscope-extension", true,
				"description", "Container incarnation (counts from 1; present while running)."),
			"incarnationStarted", obj("type", "string", "format", "date-time", "x-sandscope-extension", true,
				"description", "When the current incarnation started, RFC 3339 in UTC with nanoseconds (present while running)."),
			"processes", typ("integer"),
			"terminals", typ("integer"),
			"createdAt", obj("type", "string", "format", "date-time"),
			"lastActiveAt", obj("type", "string", "format", "date-time"),
			"allocations", obj("type", "integer", "description", "Container allocations the sandbox's requests caused."),
		))
}

// listPathItem is the path item of ListPath.
func listPathItem() *object {
	return obj("x-sandscope-extension", true, "get", obj(
		"operationId", "listSandboxes", "x-sandscope-extension", true,
		"summary", "List the sandboxes the local bridge knows (local bridge extension; starts no container)",
		"responses", obj(
			"200", obj("description", "Sandboxes, by ID.", "content", obj("application/json", obj("schema",
				obj("type", "array", "items", obj("$ref", "#/components/schemas/SandboxInfo"))))),
			"401", obj("$ref", "#/components/responses/Unauthorized"),
		)))
}

// stableOpenAPIDocument is the published stable document, its keys in the published order, plus
// the local bridge's extensions (each marked "x-sandscope-extension": true, appended after the
// published entries) and its identity in info: the sandbox list on ListPath, stop and replace,
// and the 501 answers of the routes it validates but does not support (tunnels, bucket mounts).
func stableOpenAPIDocument(bridgeID string) ([]byte, error) {
	doc, err := parseObject(openapiStable)
	if err != nil {
		return nil, fmt.Errorf("localbridge: embedded stable OpenAPI document: %w", err)
	}
	info, paths, comps := doc.child("info"), doc.child("paths"), doc.child("components")
	var schemas *object
	if comps != nil {
		schemas = comps.child("schemas")
	}
	if info == nil || paths == nil || schemas == nil {
		return nil, fmt.Errorf("localbridge: embedded stable OpenAPI document lacks info, paths or schemas")
	}
	info.set("x-sandscope-bridge-id", bridgeID)
	doc.set("info", info)

	schemas.set("SandboxInfo", sandboxInfoSchema())
	schemas.set("NotSupportedResponse", obj("type", "object", "x-sandscope-extension", true,
		"required", []string{"error", "code"},
		"properties", obj("error", obj("type", "string"), "code", obj("type", "string", "enum", []string{"not_supported"}))))
	comps.set("schemas", schemas)
	doc.set("components", comps)

	notSupported := obj("description", "Not supported by the local bridge, after the request passed the published checks (local bridge extension).",
		"x-sandscope-extension", true,
		"content", obj("application/json", obj("schema", obj("$ref", "#/components/schemas/NotSupportedResponse"))))
	for _, p := range []string{"/v1/sandbox/{id}/tunnel/{port}", "/v1/sandbox/{id}/mount", "/v1/sandbox/{id}/unmount"} {
		item := paths.child(p)
		if item == nil {
			return nil, fmt.Errorf("localbridge: embedded stable OpenAPI document has no %s", p)
		}
		for _, method := range item.keys {
			op := item.child(method)
			if op == nil {
				continue
			}
			if resp := op.child("responses"); resp != nil {
				resp.set("501", notSupported)
				op.set("responses", resp)
				item.set(method, op)
			}
		}
		paths.set(p, item)
	}
	paths.set(ListPath, listPathItem())
	for _, op := range []string{"stop", "replace"} {
		paths.set("/v1/sandbox/{id}/"+op, obj("x-sandscope-extension", true, "post", obj(
			"operationId", op+"Sandbox", "x-sandscope-extension", true,
			"summary", op+" the sandbox's container (local bridge test control; not counted as an allocation)",
			"responses", obj("204", obj("description", "Done."))),
		))
	}
	doc.set("paths", paths)
	return encodeJS(doc)
}
