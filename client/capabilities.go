package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Dialect names the bridge API a bridge speaks.
type Dialect string

const (
	DialectPreview Dialect = "v1-preview"
	DialectStable  Dialect = "stable"
	DialectUnknown Dialect = "unknown"
)

// Capabilities is what GET /v1/openapi.json says the bridge can do.
type Capabilities struct {
	Dialect Dialect
	// Local is true for sandscope's local bridge: it stops and replaces sandboxes and reports
	// incarnations explicitly. It is read from extensions other than the sandbox list, which
	// other bridges (a registry Worker) may announce too.
	Local bool
	// Extensions lists the paths marked "x-sandscope-extension".
	Extensions []string
	// ListPath is where the bridge lists its sandboxes: the path whose GET operation is
	// "listSandboxes" marked "x-sandscope-extension" (the local bridge: /v1/x-sandscope/sandboxes;
	// an older one: /v1/sandbox). "" when the document announces no list.
	ListPath string
	// BridgeID is the persistent identity a sandscope local bridge keeps in its root and announces
	// as info["x-sandscope-bridge-id"] ("" for other bridges): the same bridge however it is
	// reached (embedded, serve.json, a URL), across restarts.
	BridgeID string
}

// maxOpenAPI bounds the OpenAPI document read (the real ones are ~60 KB).
const maxOpenAPI = 8 << 20

// Capabilities reads the bridge's OpenAPI document once and caches the answer for the client's
// life. The call has no side effects on the bridge (no container is contacted). Failures are not
// cached.
func (c *Client) Capabilities(ctx context.Context) (Capabilities, error) {
	c.capsMu.Lock()
	defer c.capsMu.Unlock()
	if c.caps != nil {
		return *c.caps, nil
	}
	caps, err := c.fetchCapabilities(ctx)
	if err != nil {
		if errors.Is(err, ErrNoAnswer) {
			// the sandbox calls that follow do not wait for it again (see checkDialect)
			c.capsFailed = time.Now()
		}
		return Capabilities{}, err
	}
	c.caps = &caps
	return caps, nil
}

// StableBridgeError refuses a sandbox call to a bridge whose OpenAPI document says it speaks the
// stable API (exec, pty, session): this preview adapter refuses it (Client.Stable is the stable one), as on a stable bridge
// every /v1/sandbox/{id}/... request starts a container, lookups and unknown routes included: a
// watcher polling it would keep containers awake. errors.Is(err, ErrUnsupported) holds.
type StableBridgeError struct{}

func (e *StableBridgeError) Error() string {
	return "stable bridge API (0.12: exec, pty, session): the preview calls are not sent here (each would start a container); " +
		"use the stable adapter: sandscope exec, logs, shell, attach, session"
}

func (e *StableBridgeError) Is(target error) bool { return target == ErrUnsupported }

// capsRetryAfter is how long sandbox calls go ahead unchecked after the capability read failed.
const capsRetryAfter = time.Minute

// checkDialect returns a *StableBridgeError when the bridge speaks the stable API. It reads the
// capabilities on the first sandbox call; when they cannot be read (an older or stripped bridge,
// a network fault) the call goes ahead and the read is tried again after capsRetryAfter, so a
// bridge without the document still works. A bridge that does not answer at all within the
// answer wait fails the call (ErrNoAnswer): waiting for the call's own answer would only double
// the time a command takes to say so.
func (c *Client) checkDialect(ctx context.Context) error {
	c.capsMu.Lock()
	caps, failed := c.caps, c.capsFailed
	c.capsMu.Unlock()
	if caps == nil && (failed.IsZero() || time.Since(failed) > capsRetryAfter) {
		got, err := c.Capabilities(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.capsMu.Lock()
			c.capsFailed = time.Now()
			c.capsMu.Unlock()
			if errors.Is(err, ErrNoAnswer) {
				return err
			}
			return nil
		}
		caps = &got
	}
	if caps != nil {
		return caps.Problem()
	}
	return nil
}

// Problem is why sandscope cannot use a bridge with these capabilities (a *StableBridgeError for
// the stable API), or nil.
func (c Capabilities) Problem() error {
	if c.Dialect == DialectStable {
		return &StableBridgeError{}
	}
	return nil
}

func (c *Client) fetchCapabilities(ctx context.Context) (Capabilities, error) {
	const op = "read the bridge's API description (GET /v1/openapi.json)"
	ctx, cancel := c.callContext(ctx)
	defer cancel()
	req, err := c.newRequest(ctx, http.MethodGet, "/v1/openapi.json", nil, nil)
	if err != nil {
		return Capabilities{}, fmt.Errorf("%s: %w", op, err)
	}
	resp, err := c.send(op, req)
	if err != nil {
		return Capabilities{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOpenAPI))
	if err != nil {
		return Capabilities{}, &TransportError{Op: op, Err: err}
	}
	caps, err := ParseCapabilities(body)
	if err != nil {
		return Capabilities{}, fmt.Errorf("%s: %w", op, err)
	}
	return caps, nil
}

// ParseCapabilities decides the dialect from an OpenAPI document's path keys (info.version is the
// same in both dialects) and finds sandscope extension markers, on a path item or any operation.
//
// Every command reads the document when it starts: the path items stay raw, and only those that
// mention the marker are decoded further.
func ParseCapabilities(doc []byte) (Capabilities, error) {
	var d struct {
		Info struct {
			BridgeID json.RawMessage `json:"x-sandscope-bridge-id"`
		} `json:"info"`
		Paths map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return Capabilities{}, fmt.Errorf("OpenAPI document: %w", err)
	}
	for path, item := range d.Paths {
		// a path item is an object (or null), as when the items were decoded whole
		if len(item) == 0 || item[0] != '{' && string(item) != "null" {
			return Capabilities{}, fmt.Errorf("OpenAPI document: path %q is not an object", path)
		}
	}
	// a bridge ID that is not a well-formed string is no ID (the document is still read)
	var id string
	_ = json.Unmarshal(d.Info.BridgeID, &id)
	caps := Capabilities{Dialect: DialectUnknown, BridgeID: validBridgeID(id)}
	has := func(p string) bool { _, ok := d.Paths[p]; return ok }
	switch {
	case has("/v1/sandbox/{id}/processes") || has("/v1/sandbox/{id}/terminals/{terminalId}/connect"):
		caps.Dialect = DialectPreview
	case has("/v1/sandbox/{id}/exec") || has("/v1/sandbox/{id}/pty") || has("/v1/sandbox/{id}/session"):
		caps.Dialect = DialectStable
	}
	for path, raw := range d.Paths {
		if !mayBeMarked(raw) {
			continue
		}
		var item map[string]json.RawMessage
		if json.Unmarshal(raw, &item) != nil || !extensionMarked(item) {
			continue
		}
		caps.Extensions = append(caps.Extensions, path)
		if listOperation(item) && safeListPath(path) {
			// more than one announced (none of sandscope's bridges does): the lowest, so the
			// choice does not depend on map order
			if caps.ListPath == "" || path < caps.ListPath {
				caps.ListPath = path
			}
		} else {
			caps.Local = true
		}
	}
	sort.Strings(caps.Extensions)
	return caps, nil
}

// mayBeMarked reports whether a raw path item can hold the extension marker: its key written out,
// or written with escapes (which decode to the same key).
func mayBeMarked(item []byte) bool {
	return bytes.Contains(item, []byte("x-sandscope-extension")) || bytes.IndexByte(item, '\\') >= 0
}

// listOperation reports whether a path item's GET is the sandbox list ("listSandboxes", marked
// as an extension).
func listOperation(item map[string]json.RawMessage) bool {
	var get struct {
		OperationID string          `json:"operationId"`
		Ext         json.RawMessage `json:"x-sandscope-extension"`
	}
	return json.Unmarshal(item["get"], &get) == nil && get.OperationID == "listSandboxes" && isTrue(get.Ext)
}

// safeListPath keeps an announced list path only when it is a plain path under /v1/ and outside
// /v1/sandbox/ (a hostile document must not steer the bearer token's request anywhere odd, nor
// make a background refresh wake a stable bridge's container).
func safeListPath(p string) bool {
	if len(p) > 200 || !strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, "/v1/sandbox/") ||
		strings.Contains(p, "//") || strings.Contains(p, "..") {
		return false
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/-_.", r)) {
			return false
		}
	}
	return true
}

func extensionMarked(item map[string]json.RawMessage) bool {
	if isTrue(item["x-sandscope-extension"]) {
		return true
	}
	for _, op := range item {
		var o map[string]json.RawMessage
		if json.Unmarshal(op, &o) == nil && isTrue(o["x-sandscope-extension"]) {
			return true
		}
	}
	return false
}

func isTrue(raw json.RawMessage) bool {
	var b bool
	return raw != nil && json.Unmarshal(raw, &b) == nil && b
}

// require returns ErrUnsupported when the bridge's document lacks a local extension. When the
// document cannot be read, the call is attempted anyway (the route's own answer decides).
func (c *Client) requireLocal(ctx context.Context, what string) error {
	caps, err := c.Capabilities(ctx)
	if errors.Is(err, ErrNoAnswer) {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err != nil {
		return nil
	}
	if !caps.Local {
		return fmt.Errorf("%s: %w (a sandscope local bridge extension)", what, ErrUnsupported)
	}
	return nil
}

// validBridgeID keeps a bridge ID only when it is a short token of letters, digits and dashes
// (it names a record: nothing a hostile document sends may reach a path or the screen).
func validBridgeID(id string) string {
	if len(id) < 8 || len(id) > 64 {
		return ""
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return ""
		}
	}
	return id
}
