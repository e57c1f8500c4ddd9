package localbridge

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
)

// The stable bridge checks a tunnel, mount or unmount request before it asks the container. The
// local bridge has no tunnels and no bucket mounts, but it makes the same checks first, in the same
// order, with the same answers, and only a request the published bridge would pass on is told
// 501 not_supported.

// handleStableTunnel: POST/DELETE /tunnel/{port}.
func handleStableTunnel(w http.ResponseWriter, r *http.Request, method, rawPort string) {
	if !validTunnelPort(decodePathParam(rawPort)) {
		writeError(w, http.StatusBadRequest, "Invalid port", "invalid_request")
		return
	}
	if method == http.MethodPost {
		body, _ := readLimited(r, maxJSONBody)
		if msg := checkTunnelOptions(body); msg != "" {
			writeError(w, http.StatusBadRequest, msg, "invalid_request")
			return
		}
	}
	writeNotSupported(w, "tunnels")
}

// validTunnelPort is the SDK's validatePort(Number(param)): an integer in 1024–65535, not 3000.
func validTunnelPort(param string) bool {
	f, ok := jsToNumber(param)
	if !ok || math.IsInf(f, 0) || f != math.Trunc(f) {
		return false
	}
	return f >= 1024 && f <= 65535 && f != 3000
}

var (
	jsDecimal   = regexp.MustCompile(`^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$`)
	jsRadix     = regexp.MustCompile(`^0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)$`)
	jsInfinity  = regexp.MustCompile(`^[+-]?Infinity$`)
	tunnelLabel = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`)
)

// jsToNumber is JavaScript's Number(string): surrounding white space ignored, "" is 0, decimal
// with an optional exponent, 0x/0o/0b integers, ±Infinity; ok is false where Number gives NaN.
func jsToNumber(s string) (float64, bool) {
	s = strings.TrimFunc(s, isJSSpace)
	switch {
	case s == "":
		return 0, true
	case jsInfinity.MatchString(s):
		if s[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case jsRadix.MatchString(s):
		base := map[byte]int{'x': 16, 'o': 8, 'b': 2}[s[1]|0x20]
		n, ok := new(big.Int).SetString(s[2:], base)
		if !ok {
			return 0, false
		}
		f, _ := new(big.Float).SetInt(n).Float64()
		return f, true
	case jsDecimal.MatchString(s):
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !math.IsInf(f, 0) {
			return 0, false
		}
		return f, true // out of range: ±Infinity, as in JavaScript
	}
	return 0, false
}

// isJSSpace is JavaScript's WhiteSpace and LineTerminator (what String.prototype.trim removes).
func isJSSpace(r rune) bool {
	return r == '\uFEFF' || unicode.Is(unicode.Zs, r) || strings.ContainsRune("\t\n\v\f\r\u2028\u2029", r)
}

// checkTunnelOptions is the bridge's parseTunnelOptions: "" when the body is acceptable (empty,
// not an object, or without "name"), else the 400 message.
func checkTunnelOptions(body []byte) string {
	text := strings.ToValidUTF8(string(body), "\uFFFD")
	if strings.TrimFunc(text, isJSSpace) == "" {
		return ""
	}
	trimmed := trimJSONSpace([]byte(text))
	if !json.Valid(trimmed) {
		return "Invalid JSON body"
	}
	var fields map[string]json.RawMessage
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &fields) != nil {
		return ""
	}
	raw, ok := fields["name"]
	if !ok {
		return ""
	}
	var name string
	if raw[0] != '"' || json.Unmarshal(raw, &name) != nil {
		return "name must be a string when provided"
	}
	if n := len(utf16.Encode([]rune(name))); n == 0 || n > 63 {
		return "Tunnel name '" + name + "' must be 1–63 characters long."
	}
	if !tunnelLabel.MatchString(name) {
		return "Tunnel name '" + name + "' is not a valid DNS label. Use lowercase letters, digits, and internal hyphens only (no dots, no leading/trailing hyphens)."
	}
	return ""
}

// jsBody is a request body parsed as the bridge's c.req.json() sees it: ok false when JSON.parse
// throws; null true for the literal null (property access on it throws: text 500); fields holds
// an object's members (nil for any other value, whose properties are all undefined).
type jsBody struct {
	ok, null bool
	fields   map[string]json.RawMessage
}

func parseJSBody(r *http.Request) jsBody {
	body, err := readLimited(r, maxJSONBody)
	trimmed := trimJSONSpace(body)
	if err != nil || len(trimmed) == 0 || !json.Valid(trimmed) {
		return jsBody{}
	}
	b := jsBody{ok: true, null: bytes.Equal(trimmed, []byte("null"))}
	if trimmed[0] == '{' {
		_ = json.Unmarshal(trimmed, &b.fields)
	}
	return b
}

// trimJSONSpace trims the white space JSON.parse allows around a value (space, tab, CR, LF; not
// the wider Unicode set that bytes.TrimSpace removes).
func trimJSONSpace(b []byte) []byte { return bytes.Trim(b, " \t\r\n") }

// jsType is JavaScript's typeof of a JSON member ("undefined" when absent).
func jsType(raw json.RawMessage, present bool) string {
	if !present {
		return "undefined"
	}
	switch raw = trimJSONSpace(raw); {
	case len(raw) == 0:
		return "undefined"
	case raw[0] == '"':
		return "string"
	case raw[0] == 't' || raw[0] == 'f':
		return "boolean"
	case raw[0] == '{' || raw[0] == '[' || raw[0] == 'n':
		return "object"
	default:
		return "number"
	}
}

// member looks up a field: its raw value, its typeof, and its string value when it is one.
func member(fields map[string]json.RawMessage, key string) (raw json.RawMessage, typ, str string) {
	raw, ok := fields[key]
	typ = jsType(raw, ok)
	if typ == "string" {
		_ = json.Unmarshal(raw, &str)
	}
	return raw, typ, str
}

func isJSONObject(raw json.RawMessage) bool {
	raw = trimJSONSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// handleStableMount: POST /mount, checked as the bridge does (body, mountPath, options,
// validateMountOptions, resolveMountBucketName), then not supported.
func handleStableMount(w http.ResponseWriter, r *http.Request) {
	b := parseJSBody(r)
	switch {
	case !b.ok:
		writeError(w, http.StatusBadRequest, "Invalid JSON body", "invalid_request")
		return
	case b.null:
		writeInternalError(w) // body.bucket of null throws
		return
	}
	if msg := checkMount(b.fields); msg != "" {
		writeError(w, http.StatusBadRequest, msg, "invalid_request")
		return
	}
	writeNotSupported(w, "bucket mounts")
}

func checkMount(f map[string]json.RawMessage) string {
	_, bucketType, bucket := member(f, "bucket")
	if bucketType != "undefined" && (bucketType != "string" || bucket == "") {
		return "bucket must be a non-empty string"
	}
	if _, t, p := member(f, "mountPath"); t != "string" || p == "" {
		return "mountPath must be a non-empty string"
	} else if !strings.HasPrefix(p, "/") {
		return "mountPath must be an absolute path (start with /)"
	}
	optRaw, ok := f["options"]
	if !ok || !isJSONObject(optRaw) {
		return "options must be an object"
	}
	var opts map[string]json.RawMessage
	_ = json.Unmarshal(optRaw, &opts)
	_, bindingType, binding := member(f, "binding")
	// validateMountOptions
	_, endpointType, _ := member(opts, "endpoint")
	if endpointType != "undefined" && endpointType != "string" {
		return "options.endpoint must be a string when provided"
	}
	if bindingType != "undefined" && bindingType != "string" {
		return "binding must be a string when provided"
	}
	if bindingType == "string" && binding == "" {
		return "binding must be a non-empty string when provided"
	}
	if bindingType != "undefined" && endpointType != "undefined" {
		return "Provide either binding or options.endpoint, not both"
	}
	if raw, t, _ := member(opts, "s3fsOptions"); t != "undefined" && !stringArray(raw) {
		return "options.s3fsOptions must be an array of strings when provided"
	}
	if _, t, _ := member(opts, "readOnly"); t != "undefined" && t != "boolean" {
		return "options.readOnly must be a boolean when provided"
	}
	if _, t, _ := member(opts, "prefix"); t != "undefined" && t != "string" {
		return "options.prefix must be a string when provided"
	}
	if _, t, _ := member(opts, "credentialProxy"); t != "undefined" && t != "boolean" {
		return "options.credentialProxy must be a boolean when provided"
	}
	if raw, t, _ := member(opts, "credentials"); t != "undefined" {
		var c map[string]json.RawMessage
		if !isJSONObject(raw) || json.Unmarshal(raw, &c) != nil ||
			jsType(c["accessKeyId"], c["accessKeyId"] != nil) != "string" ||
			jsType(c["secretAccessKey"], c["secretAccessKey"] != nil) != "string" {
			return "options.credentials must include string accessKeyId and secretAccessKey"
		}
	}
	// resolveMountBucketName
	if endpointType == "string" {
		if bucketType != "string" || bucket == "" {
			return "bucket must be a non-empty string for remote mounts"
		}
		return ""
	}
	if bindingType == "undefined" {
		return "binding must be a non-empty string for R2 binding mounts"
	}
	return ""
}

func stringArray(raw json.RawMessage) bool {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return false
	}
	for _, it := range items {
		if jsType(it, true) != "string" {
			return false
		}
	}
	return true
}

// handleStableUnmount: POST /unmount, checked as the bridge does, then not supported.
func handleStableUnmount(w http.ResponseWriter, r *http.Request) {
	b := parseJSBody(r)
	switch {
	case !b.ok:
		writeError(w, http.StatusBadRequest, "Invalid JSON body", "invalid_request")
		return
	case b.null:
		writeInternalError(w)
		return
	}
	_, t, p := member(b.fields, "mountPath")
	switch {
	case t != "string" || p == "":
		writeError(w, http.StatusBadRequest, "mountPath must be a non-empty string", "invalid_request")
		return
	case !strings.HasPrefix(p, "/"):
		writeError(w, http.StatusBadRequest, "mountPath must be an absolute path (start with /)", "invalid_request")
		return
	}
	pathname, ok := fileURLPathname(p)
	if !ok {
		writeInternalError(w) // new URL() throws, uncaught
		return
	}
	if pathname == "/" {
		writeError(w, http.StatusBadRequest, "mountPath must not resolve to / (filesystem root)", "invalid_request")
		return
	}
	writeNotSupported(w, "bucket mounts")
}

// fileURLPathname is new URL(p, "file:///").pathname for an absolute p, as far as it decides
// whether the path is the root: tabs and newlines removed, query and fragment cut, "\" as "/",
// "//host" taken as a host, and "." and ".." segments (also percent-encoded) resolved. ok is
// false where the URL parser throws (a forbidden host character).
func fileURLPathname(p string) (string, bool) {
	p = strings.TrimFunc(p, func(r rune) bool { return r <= ' ' })
	p = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(p)
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	p = strings.ReplaceAll(p, `\`, "/")
	if strings.HasPrefix(p, "//") {
		host, rest, _ := strings.Cut(p[2:], "/")
		if strings.ContainsAny(host, " #%:<>?@[]^|\x00") {
			return "", false
		}
		p = "/" + rest
	}
	var segs []string
	parts := strings.Split(p[1:], "/")
	for i, seg := range parts {
		last := i == len(parts)-1
		switch strings.ToLower(seg) {
		case "..", ".%2e", "%2e.", "%2e%2e":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
			if last {
				segs = append(segs, "")
			}
		case ".", "%2e":
			if last {
				segs = append(segs, "")
			}
		default:
			segs = append(segs, seg)
		}
	}
	return "/" + strings.Join(segs, "/"), true
}
