package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Request is one row of the table.
type Request struct {
	Name    string            `json:"name"`
	Method  string            `json:"method,omitempty"`
	Path    string            `json:"path"` // path and query, as sent on the wire
	Headers map[string]string `json:"headers,omitempty"`
	Body    *string           `json:"body,omitempty"`
}

// Response is what a bridge answered to one row.
type Response struct {
	Name         string `json:"name"`
	Status       int    `json:"status"`
	ContentType  string `json:"contentType"`
	CacheControl string `json:"cacheControl"`
	Body         string `json:"body"`
	BodyError    bool   `json:"bodyError"` // the body ended with an error instead of cleanly
}

// Script is what the harness's fake container knows (see harness/run.mjs).
type Script struct {
	Assigned       []string          `json:"assigned"`            // sandbox IDs with a container; the first one is scripted
	Processes      []ScriptedProcess `json:"processes,omitempty"` // in list order
	Terminals      []json.RawMessage `json:"terminals,omitempty"` // TerminalSnapshot objects
	Exec           json.RawMessage   `json:"exec,omitempty"`      // status of any newly launched process
	CreateTerminal json.RawMessage   `json:"createTerminal,omitempty"`
}

// ScriptedProcess is one process: its status and its log events (the bridge's SSE event objects,
// data base64 encoded).
type ScriptedProcess struct {
	Status json.RawMessage   `json:"status"`
	Events []json.RawMessage `json:"events"`
	// StreamEnd "abort" makes a log stream fail after the scripted events, as a container lost
	// mid-stream does; "" ends it cleanly.
	StreamEnd string `json:"streamEnd,omitempty"`
}

// Input is the harness's standard input.
type Input struct {
	Token    string    `json:"token"`
	Script   Script    `json:"script"`
	Requests []Request `json:"requests"`
}

// Dir is the folder holding package.json and harness/, found from the working directory (go test
// runs in the package folder).
func Dir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for _, d := range []string{wd, filepath.Join(wd, "conformance")} {
		if _, err := os.Stat(filepath.Join(d, "harness", "run.mjs")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("conformance harness not found from %s", wd)
}

// EnsureModules runs `npm ci` in dir when its node_modules lacks one of the bridge packages (the
// preview one and the stable one, installed as @cloudflare/sandbox-stable).
func EnsureModules(ctx context.Context, dir string) error {
	have := true
	for _, pkg := range []string{"sandbox", "sandbox-stable"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@cloudflare", pkg, "dist", "bridge", "index.js")); err != nil {
			have = false
		}
	}
	if have {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("npm ci in %s: %w\n%s", dir, err, tail(out, 2000))
	}
	return nil
}

// RunHarness sends the input to the Node harness and returns its answers, one per request.
func RunHarness(ctx context.Context, dir string, in Input) ([]Response, error) {
	var out struct {
		Responses []Response `json:"responses"`
	}
	if err := runNode(ctx, dir, "run.mjs", in, &out); err != nil {
		return nil, err
	}
	if len(out.Responses) != len(in.Requests) {
		return nil, fmt.Errorf("harness answered %d of %d requests", len(out.Responses), len(in.Requests))
	}
	return out.Responses, nil
}

// runNode runs harness/<script> with in on stdin and decodes its standard output into out.
func runNode(ctx context.Context, dir, script string, in any, out any) error {
	payload, err := json.Marshal(in)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("harness", script))
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(payload)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("harness: %w\n%s", err, tail(stderr.Bytes(), 4000))
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		return fmt.Errorf("harness output: %w\n%s", err, tail(stderr.Bytes(), 2000))
	}
	return nil
}

// Send sends one row to a bridge over HTTP, reading the whole body (a body that ends with an error
// is marked, as the harness does).
func Send(ctx context.Context, hc *http.Client, base string, r Request) (Response, error) {
	out := Response{Name: r.Name}
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if r.Body != nil {
		body = strings.NewReader(*r.Body)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+r.Path, body)
	if err != nil {
		return out, err
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	res, err := hc.Do(req)
	if err != nil {
		return out, err
	}
	defer res.Body.Close()
	out.Status = res.StatusCode
	out.ContentType = res.Header.Get("Content-Type")
	out.CacheControl = res.Header.Get("Cache-Control")
	data, err := io.ReadAll(res.Body)
	if err != nil {
		out.BodyError = true
	}
	out.Body = string(data)
	return out, nil
}

var (
	reUUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	reTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)
)

// Normalize makes a response comparable: JSON bodies are parsed and re-encoded with sorted keys,
// UUIDs become "<uuid>", timestamps "<time>", "pid" values 0, and the local bridge's
// "incarnation" and "incarnationStarted" extension fields are dropped (the published bridge has
// no container identity to report); SSE bodies get the same treatment per event, keeping their
// framing (anything that is not a `data: ` line stays as it is).
func Normalize(r Response) Response {
	ct := strings.ToLower(r.ContentType)
	switch {
	case strings.HasPrefix(ct, "application/json"):
		r.Body = normalizeJSONText(r.Body)
	case strings.HasPrefix(ct, "text/event-stream"):
		r.Body = normalizeSSE(r.Body)
	}
	return r
}

func normalizeSSE(body string) string {
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		if rest, ok := strings.CutPrefix(l, "data: "); ok {
			lines[i] = "data: " + normalizeJSONText(rest)
		}
	}
	return strings.Join(lines, "\n")
}

func normalizeJSONText(s string) string {
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return s
	}
	if dec.More() {
		return s
	}
	b, err := marshalSorted(normalizeValue("", v))
	if err != nil {
		return s
	}
	return string(b)
}

func normalizeValue(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			if k == "incarnation" || k == "incarnationStarted" {
				continue
			}
			out[k] = normalizeValue(k, val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = normalizeValue(key, val)
		}
		return out
	case string:
		switch {
		case reUUID.MatchString(x):
			return "<uuid>"
		case reTime.MatchString(x):
			return "<time>"
		}
		return x
	case json.Number:
		if key == "pid" {
			return json.Number("0")
		}
		return x
	default:
		return v
	}
}

// marshalSorted encodes with map keys sorted (encoding/json already sorts map keys).
func marshalSorted(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// NormalizeOrdered is Normalize keeping each JSON object's keys in the order the bridge wrote
// them, so that a difference in field order is a difference (JSON.stringify writes keys in
// insertion order; a Go map would write them sorted).
func NormalizeOrdered(r Response) Response {
	ct := strings.ToLower(r.ContentType)
	switch {
	case strings.HasPrefix(ct, "application/json"):
		r.Body = normalizeOrderedText(r.Body)
	case strings.HasPrefix(ct, "text/event-stream"):
		lines := strings.Split(r.Body, "\n")
		for i, l := range lines {
			if rest, ok := strings.CutPrefix(l, "data: "); ok {
				lines[i] = "data: " + normalizeOrderedText(rest)
			}
		}
		r.Body = strings.Join(lines, "\n")
	}
	return r
}

// normalizeOrderedText re-encodes one JSON text compactly with normalizeValue's replacements,
// keys in their original order; text that is not one JSON value stays as it is.
func normalizeOrderedText(s string) string {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var buf bytes.Buffer
	if err := orderedValue(dec, &buf, ""); err != nil {
		return s
	}
	if _, err := dec.Token(); err != io.EOF {
		return s
	}
	return buf.String()
}

func orderedValue(dec *json.Decoder, buf *bytes.Buffer, key string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			buf.WriteByte('{')
			first := true
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k, _ := kt.(string)
				if k == "incarnation" || k == "incarnationStarted" {
					var skip json.RawMessage
					if err := dec.Decode(&skip); err != nil {
						return err
					}
					continue
				}
				if !first {
					buf.WriteByte(',')
				}
				first = false
				kb, _ := marshalSorted(k)
				buf.Write(kb)
				buf.WriteByte(':')
				if err := orderedValue(dec, buf, k); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			buf.WriteByte('}')
		case '[':
			buf.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					buf.WriteByte(',')
				}
				if err := orderedValue(dec, buf, key); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			buf.WriteByte(']')
		}
		return nil
	default:
		b, err := marshalSorted(normalizeValue(key, tok))
		if err != nil {
			return err
		}
		buf.Write(b)
		return nil
	}
}

// Diff describes how two normalised responses differ; "" when they agree.
func Diff(want, got Response) string {
	var d []string
	if want.Status != got.Status {
		d = append(d, fmt.Sprintf("status: published %d, local %d", want.Status, got.Status))
	}
	if !strings.EqualFold(want.ContentType, got.ContentType) {
		d = append(d, fmt.Sprintf("content type: published %q, local %q", want.ContentType, got.ContentType))
	}
	if want.CacheControl != got.CacheControl {
		d = append(d, fmt.Sprintf("cache-control: published %q, local %q", want.CacheControl, got.CacheControl))
	}
	if want.Body != got.Body {
		d = append(d, fmt.Sprintf("body:\n      published %q\n      local     %q", clip(want.Body), clip(got.Body)))
	}
	if want.BodyError != got.BodyError {
		d = append(d, fmt.Sprintf("body ended with error: published %v, local %v", want.BodyError, got.BodyError))
	}
	sort.Strings(d)
	return strings.Join(d, "; ")
}

func clip(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// ErrNoNode means node or npm is not installed.
var ErrNoNode = errors.New("node and npm are needed for the conformance harness")

// CheckNode reports whether node and npm are on PATH.
func CheckNode() error {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: %s not found", ErrNoNode, tool)
		}
	}
	return nil
}

// StableScript is what the stable harness's fake container does (see harness/run-stable.mjs).
type StableScript struct {
	Assigned []string          `json:"assigned,omitempty"`
	Execs    []StableExec      `json:"execs"`              // one per streaming exec call, in call order
	Sessions []string          `json:"sessions,omitempty"` // sessions that exist before the table
	Files    map[string]string `json:"files,omitempty"`    // /workspace path → base64 content
}

// StableExec is one scripted exec: its output chunks (text, as the container decoded it) and how
// it ends.
type StableExec struct {
	Output []StableChunk `json:"output"`
	End    StableEnd     `json:"end"`
}

// StableChunk is one onOutput call.
type StableChunk struct {
	Stream string `json:"stream"`
	Text   string `json:"text"`
}

// StableEnd is how a scripted exec ends: an exit code, a completion without one, an onError, or a
// rejected call.
type StableEnd struct {
	ExitCode   *int    `json:"exitCode,omitempty"`
	NoExitCode bool    `json:"noExitCode,omitempty"`
	Error      *string `json:"error,omitempty"`
	Reject     *string `json:"reject,omitempty"`
}

// StableCommand is one command the stable bridge asked the fake container to run.
type StableCommand struct {
	Command string  `json:"command"`
	Session *string `json:"session"`
	Cwd     *string `json:"cwd"`
	Stream  bool    `json:"stream"` // a streaming exec (POST /exec); false for GET /running's probe
}

// StableAnswer is the stable harness's output.
type StableAnswer struct {
	Responses   []Response      `json:"responses"`
	Commands    []StableCommand `json:"commands"`
	Allocations map[string]int  `json:"allocations"`
}

// RunStableHarness sends the input to the stable (0.12.10) harness.
func RunStableHarness(ctx context.Context, dir, token string, script StableScript, requests []Request) (StableAnswer, error) {
	in := struct {
		Token    string       `json:"token"`
		Script   StableScript `json:"script"`
		Requests []Request    `json:"requests"`
	}{token, script, requests}
	var out StableAnswer
	if err := runNode(ctx, dir, "run-stable.mjs", in, &out); err != nil {
		return out, err
	}
	if len(out.Responses) != len(requests) {
		return out, fmt.Errorf("stable harness answered %d of %d requests", len(out.Responses), len(requests))
	}
	return out, nil
}
