package conformance

import "strings"

// stableRouteRows are the routing classes of the stable table: routes the published bridge does
// not have (the sandbox list among them), wrong methods, unknown paths under /v1 and paths
// outside it. Each answer is compared, body and content type included; none allocates except
// where the published pool middleware does (compared through the allocation counts).
func stableRouteRows(token string) []Request {
	str := func(s string) *string { return &s }
	bearer := map[string]string{"Authorization": "Bearer " + token}
	lower := map[string]string{"Authorization": "bearer " + token}
	const sb = "/v1/sandbox/routebox"
	return []Request{
		// The sandbox list is no route of the published bridge: its /v1/sandbox/* middleware
		// checks auth, then the router has no GET /v1/sandbox.
		{Name: "GET /v1/sandbox no auth", Path: "/v1/sandbox"},
		{Name: "HEAD /v1/sandbox", Method: "HEAD", Path: "/v1/sandbox", Headers: bearer},
		{Name: "PUT /v1/sandbox", Method: "PUT", Path: "/v1/sandbox", Headers: bearer, Body: str(`{}`)},
		{Name: "DELETE /v1/sandbox", Method: "DELETE", Path: "/v1/sandbox", Headers: bearer},
		{Name: "PATCH /v1/sandbox no auth", Method: "PATCH", Path: "/v1/sandbox"},
		{Name: "GET /v1/sandbox/ trailing", Path: "/v1/sandbox/", Headers: bearer},
		{Name: "POST /v1/sandbox/ trailing no auth", Method: "POST", Path: "/v1/sandbox/"},
		{Name: "GET /v1/sandbox query", Path: "/v1/sandbox?all=1", Headers: bearer},
		{Name: "list extension path", Path: "/v1/x-sandscope/sandboxes", Headers: bearer},
		{Name: "list extension path no auth", Path: "/v1/x-sandscope/sandboxes"},
		// Unknown paths under the prefix: the router's text 404, no auth asked.
		{Name: "bare prefix", Path: "/v1", Headers: bearer},
		{Name: "bare prefix slash", Path: "/v1/"},
		{Name: "unknown under v1", Path: "/v1/nothing"},
		{Name: "unknown under v1 auth", Method: "POST", Path: "/v1/nothing", Headers: bearer},
		{Name: "v1 sandboxes plural", Path: "/v1/sandboxes", Headers: bearer},
		// OpenAPI: auth is middleware of the GET routes only.
		{Name: "openapi POST no auth", Method: "POST", Path: "/v1/openapi.json"},
		{Name: "openapi DELETE auth", Method: "DELETE", Path: "/v1/openapi.json", Headers: bearer},
		{Name: "openapi trailing slash", Path: "/v1/openapi.json/", Headers: bearer},
		{Name: "openapi yaml", Path: "/v1/openapi.yaml", Headers: bearer},
		{Name: "openapi lowercase bearer", Path: "/v1/openapi.json", Headers: lower},
		{Name: "openapi html no auth", Path: "/v1/openapi.html"},
		{Name: "openapi bare no auth", Path: "/v1/openapi"},
		{Name: "HEAD openapi no auth", Method: "HEAD", Path: "/v1/openapi.json"},
		// Pool routes: case-sensitive auth on /v1/pool/*, then the router.
		{Name: "pool bare", Path: "/v1/pool", Headers: bearer},
		{Name: "pool bare no auth", Path: "/v1/pool"},
		{Name: "pool slash", Path: "/v1/pool/", Headers: bearer},
		{Name: "pool unknown", Path: "/v1/pool/nothing", Headers: bearer},
		{Name: "pool unknown no auth", Path: "/v1/pool/nothing"},
		{Name: "pool stats lowercase bearer", Path: "/v1/pool/stats", Headers: lower},
		{Name: "pool stats POST", Method: "POST", Path: "/v1/pool/stats", Headers: bearer},
		{Name: "pool prime GET", Path: "/v1/pool/prime", Headers: bearer},
		{Name: "pool shutdown prewarmed", Method: "POST", Path: "/v1/pool/shutdown-prewarmed", Headers: bearer},
		{Name: "pool shutdown prewarmed GET", Path: "/v1/pool/shutdown-prewarmed", Headers: bearer},
		{Name: "pool stats trailing", Path: "/v1/pool/stats/", Headers: bearer},
		{Name: "HEAD pool stats", Method: "HEAD", Path: "/v1/pool/stats", Headers: bearer},
		// Health.
		{Name: "health POST", Method: "POST", Path: "/health"},
		{Name: "HEAD health", Method: "HEAD", Path: "/health"},
		{Name: "health query", Path: "/health?deep=1"},
		{Name: "health trailing", Path: "/health/"},
		{Name: "healthz", Path: "/healthz"},
		// Sandbox routes with the wrong method or an unknown tail (the pool middleware allocates
		// first, then the router answers 404).
		{Name: "POST bare sandbox", Method: "POST", Path: sb, Headers: bearer},
		{Name: "PUT bare sandbox", Method: "PUT", Path: sb, Headers: bearer, Body: str(`{}`)},
		{Name: "POST running", Method: "POST", Path: sb + "/running", Headers: bearer},
		{Name: "PUT exec", Method: "PUT", Path: sb + "/exec", Headers: bearer, Body: str(`{"argv":["true"]}`)},
		{Name: "GET session", Path: sb + "/session", Headers: bearer},
		{Name: "DELETE session empty", Method: "DELETE", Path: sb + "/session/", Headers: bearer},
		{Name: "DELETE session nested", Method: "DELETE", Path: sb + "/session/a/b", Headers: bearer},
		{Name: "POST pty", Method: "POST", Path: sb + "/pty", Headers: bearer},
		{Name: "GET file bare", Path: sb + "/file", Headers: bearer},
		{Name: "DELETE file", Method: "DELETE", Path: sb + "/file/workspace/x", Headers: bearer},
		{Name: "GET tunnel", Path: sb + "/tunnel/8080", Headers: bearer},
		{Name: "POST tunnel bare", Method: "POST", Path: sb + "/tunnel", Headers: bearer},
		{Name: "POST tunnel nested", Method: "POST", Path: sb + "/tunnel/8080/x", Headers: bearer},
		{Name: "GET mount", Path: sb + "/mount", Headers: bearer},
		{Name: "GET persist", Path: sb + "/persist", Headers: bearer},
		{Name: "double slash", Path: sb + "//running", Headers: bearer},
		{Name: "processes route of preview", Method: "POST", Path: sb + "/processes", Headers: bearer, Body: str(`{"argv":["true"]}`)},
		{Name: "terminals route of preview", Method: "POST", Path: sb + "/terminals", Headers: bearer, Body: str(`{}`)},
		{Name: "stop extension no auth", Method: "POST", Path: sb + "/stop"},
		// Sandbox IDs the format check refuses before auth.
		{Name: "id too long", Path: "/v1/sandbox/" + strings.Repeat("a", 129) + "/running"},
		{Name: "id 128", Method: "POST", Path: "/v1/sandbox/" + strings.Repeat("a", 128) + "/nothing"},
		{Name: "id uppercase", Path: "/v1/sandbox/ABC/running", Headers: bearer},
		{Name: "id digit 1", Path: "/v1/sandbox/abc1/running", Headers: bearer},
		{Name: "id escaped", Path: "/v1/sandbox/%61bc/running", Headers: bearer},
		{Name: "id dash", Method: "DELETE", Path: "/v1/sandbox/a-b"},
		// Outside the API prefix the bridge hands the request to the deployer's Worker; the
		// bare bridge answers "Not Found".
		{Name: "outside root", Path: "/"},
		{Name: "outside POST", Method: "POST", Path: "/nothing", Body: str(`{}`)},
		{Name: "outside v1x", Path: "/v1x", Headers: bearer},
		{Name: "outside v1x sandbox", Path: "/v1x/sandbox", Headers: bearer},
		{Name: "outside uppercase prefix", Path: "/V1/sandbox", Headers: bearer},
		{Name: "outside v2", Path: "/v2/sandbox", Headers: bearer},
		{Name: "outside health trailing", Method: "POST", Path: "/healthz"},
		{Name: "outside HEAD", Method: "HEAD", Path: "/nothing"},
		{Name: "outside query", Path: "/favicon.ico?x=1"},
	}
}

// stableValidationRows are the request checks the published bridge makes before calling the
// container: tunnel ports and names, mount and unmount bodies, persist excludes and hydrate
// payloads. The local bridge has no tunnels or bucket mounts, but it refuses a malformed request
// with the published bridge's own answer before it says so ("tunnel ok"/"mount ok" rows are the
// well-formed ones: deliberate).
func stableValidationRows(token string) []Request {
	str := func(s string) *string { return &s }
	bearer := map[string]string{"Authorization": "Bearer " + token}
	const sb = "/v1/sandbox/checkbox"
	tunnel := func(name, method, port string, body *string) Request {
		return Request{Name: name, Method: method, Path: sb + "/tunnel/" + port, Headers: bearer, Body: body}
	}
	post := func(name, path, body string) Request {
		return Request{Name: name, Method: "POST", Path: sb + path, Headers: bearer, Body: str(body)}
	}
	rows := []Request{
		tunnel("tunnel port word", "POST", "abc", nil),
		tunnel("tunnel port 0", "POST", "0", nil),
		tunnel("tunnel port 80", "POST", "80", nil),
		tunnel("tunnel port 1023", "POST", "1023", nil),
		tunnel("tunnel port 3000", "POST", "3000", nil),
		tunnel("tunnel port 65536", "POST", "65536", nil),
		tunnel("tunnel port fraction", "POST", "8080.5", nil),
		tunnel("tunnel port negative", "POST", "-8080", nil),
		tunnel("tunnel port infinity", "POST", "Infinity", nil),
		tunnel("tunnel port huge", "POST", "1e400", nil),
		tunnel("tunnel ok port spaces", "POST", "%208080", nil),
		tunnel("tunnel port plus", "POST", "+", nil),
		tunnel("tunnel port underscore", "POST", "8_080", nil),
		tunnel("tunnel delete port word", "DELETE", "http", nil),
		tunnel("tunnel delete port 3000", "DELETE", "3000", nil),
		tunnel("tunnel delete port 70000", "DELETE", "70000", nil),
		tunnel("tunnel body invalid json", "POST", "8080", str(`{`)),
		tunnel("tunnel body name number", "POST", "8080", str(`{"name":5}`)),
		tunnel("tunnel body name null", "POST", "8080", str(`{"name":null}`)),
		tunnel("tunnel body name empty", "POST", "8080", str(`{"name":""}`)),
		tunnel("tunnel body name upper", "POST", "8080", str(`{"name":"App"}`)),
		tunnel("tunnel body name dots", "POST", "8080", str(`{"name":"a.b"}`)),
		tunnel("tunnel body name hyphen end", "POST", "8080", str(`{"name":"app-"}`)),
		tunnel("tunnel body name 64", "POST", "8080", str(`{"name":"`+strings.Repeat("a", 64)+`"}`)),
		tunnel("tunnel body name unicode", "POST", "8080", str(`{"name":"\u00e9t\u00e9"}`)),
		tunnel("tunnel bad port before bad body", "POST", "80", str(`{`)),
		// well-formed: the published bridge asks the container, the local one has no tunnels
		tunnel("tunnel ok quick", "POST", "8080", nil),
		tunnel("tunnel ok named", "POST", "0x1f90", str(`{"name":"app-1"}`)),
		tunnel("tunnel ok spaces body", "POST", "1e4", str("  \n ")),
		tunnel("tunnel ok array body", "POST", "8081", str(`[1]`)),
		tunnel("tunnel ok null body", "POST", "8082", str(`null`)),
		tunnel("tunnel ok delete", "DELETE", "8080", nil),

		post("mount invalid json", "/mount", `{`),
		post("mount empty body", "/mount", ``),
		post("mount null body", "/mount", `null`),
		post("mount number body", "/mount", `7`),
		post("mount no mountPath", "/mount", `{}`),
		post("mount bucket empty", "/mount", `{"bucket":"","mountPath":"/m"}`),
		post("mount bucket number", "/mount", `{"bucket":5,"mountPath":"/m"}`),
		post("mount mountPath number", "/mount", `{"mountPath":5}`),
		post("mount relative", "/mount", `{"mountPath":"m"}`),
		post("mount no options", "/mount", `{"mountPath":"/m"}`),
		post("mount options array", "/mount", `{"mountPath":"/m","options":[]}`),
		post("mount options string", "/mount", `{"mountPath":"/m","options":"x"}`),
		post("mount endpoint number", "/mount", `{"mountPath":"/m","options":{"endpoint":5}}`),
		post("mount binding number", "/mount", `{"mountPath":"/m","binding":5,"options":{}}`),
		post("mount binding empty", "/mount", `{"mountPath":"/m","binding":"","options":{}}`),
		post("mount binding and endpoint", "/mount", `{"mountPath":"/m","binding":"B","options":{"endpoint":"https://x"}}`),
		post("mount binding and null endpoint", "/mount", `{"mountPath":"/m","binding":"B","options":{"endpoint":null}}`),
		post("mount s3fsOptions", "/mount", `{"mountPath":"/m","binding":"B","options":{"s3fsOptions":["a",1]}}`),
		post("mount readOnly", "/mount", `{"mountPath":"/m","binding":"B","options":{"readOnly":"yes"}}`),
		post("mount prefix", "/mount", `{"mountPath":"/m","binding":"B","options":{"prefix":1}}`),
		post("mount credentialProxy", "/mount", `{"mountPath":"/m","options":{"endpoint":"https://x","credentialProxy":"1"}}`),
		post("mount credentials", "/mount", `{"mountPath":"/m","options":{"endpoint":"https://x","credentials":{"accessKeyId":"a"}}}`),
		post("mount credentials null", "/mount", `{"mountPath":"/m","options":{"endpoint":"https://x","credentials":null}}`),
		post("mount remote no bucket", "/mount", `{"mountPath":"/m","options":{"endpoint":"https://x"}}`),
		post("mount no binding", "/mount", `{"mountPath":"/m","options":{}}`),
		post("mount ok binding", "/mount", `{"mountPath":"/m","binding":"B","options":{"readOnly":true,"prefix":"p/","s3fsOptions":["x"]}}`),
		post("mount ok remote", "/mount", `{"bucket":"b","mountPath":"/m","options":{"endpoint":"https://x","credentials":{"accessKeyId":"a","secretAccessKey":"s"},"credentialProxy":false}}`),

		post("unmount invalid json", "/unmount", `{`),
		post("unmount null body", "/unmount", `null`),
		post("unmount no mountPath", "/unmount", `{}`),
		post("unmount mountPath array", "/unmount", `{"mountPath":["/m"]}`),
		post("unmount relative", "/unmount", `{"mountPath":"m"}`),
		post("unmount root", "/unmount", `{"mountPath":"/"}`),
		post("unmount root dots", "/unmount", `{"mountPath":"/a/.."}`),
		post("unmount root escaped dots", "/unmount", `{"mountPath":"/a/%2e%2E/"}`),
		post("unmount root backslash", "/unmount", `{"mountPath":"/..\\\\.."}`),
		post("unmount double slash", "/unmount", `{"mountPath":"//"}`),
		post("unmount ok", "/unmount", `{"mountPath":"/m/../n/"}`),

		post("persist excludes dots", "/persist?excludes=a,../b", ``),
		post("hydrate empty", "/hydrate", ``),
	}
	return rows
}
