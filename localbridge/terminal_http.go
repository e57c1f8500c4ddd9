package localbridge

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// validTerminalID is the bridge's terminal ID check: 1–128 of [a-zA-Z0-9._-], no "..".
func validTerminalID(id string) bool {
	return isIDToken(id) && !strings.Contains(id, "..")
}

const (
	codeInvalidRequest = "invalid_request"
	codeNotFound       = "not_found"
	codeExecTransport  = "exec_transport_error"
)

func writeTerminalNotFound(w http.ResponseWriter) {
	writeError(w, http.StatusNotFound, "Terminal not found", codeNotFound)
}

func writeTerminalFailed(w http.ResponseWriter, err error) {
	writeError(w, http.StatusBadGateway, "terminal failed: "+err.Error(), codeExecTransport)
}

// serveTerminals handles /v1/sandbox/{id}/terminals and everything below it, after the sandbox ID
// was validated and the request authenticated; rest is the path after ".../terminals" ("" or
// "/…"). Unknown paths and methods get Hono's text 404 (there is no 405), as do trailing slashes
// and empty segments.
func (s *Server) serveTerminals(w http.ResponseWriter, r *http.Request, sandbox, rest string) {
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	if rest == "" {
		switch method {
		case http.MethodPost:
			s.createTerminal(w, r, sandbox)
		case http.MethodGet:
			s.listTerminals(w, sandbox)
		default:
			writeNotFoundText(w)
		}
		return
	}
	if !strings.HasPrefix(rest, "/") {
		writeNotFoundText(w)
		return
	}
	parts := strings.Split(rest[1:], "/")
	for i, p := range parts {
		if p == "" {
			writeNotFoundText(w)
			return
		}
		parts[i] = decodePathParam(p)
	}
	switch {
	case len(parts) == 1 && method == http.MethodGet:
		s.getTerminal(w, sandbox, parts[0])
	case len(parts) == 2 && parts[1] == "connect" && method == http.MethodGet:
		s.connectTerminalRoute(w, r, sandbox, parts[0])
	case len(parts) == 2 && parts[1] == "interrupt" && method == http.MethodPost:
		s.signalTerminal(w, sandbox, parts[0], (*terminal).interrupt)
	case len(parts) == 2 && parts[1] == "terminate" && method == http.MethodPost:
		s.signalTerminal(w, sandbox, parts[0], (*terminal).terminate)
	default:
		writeNotFoundText(w)
	}
}

// lookupTerminal runs the lookup-mode checks shared by the per-terminal routes: no assignment →
// 404, bad ID → 400, unknown → 404. It writes the answer and returns nil on failure.
func (s *Server) lookupTerminal(w http.ResponseWriter, sandbox, id string) *terminal {
	inc := s.lookupIncarnation(sandbox)
	if inc == nil || inc.terms == nil {
		writeTerminalNotFound(w)
		return nil
	}
	if !validTerminalID(id) {
		writeError(w, http.StatusBadRequest, "Invalid terminal ID format", codeInvalidRequest)
		return nil
	}
	term := inc.terms.get(id)
	if term == nil {
		writeTerminalNotFound(w)
		return nil
	}
	return term
}

func (s *Server) listTerminals(w http.ResponseWriter, sandbox string) {
	out := []termSnapshot{}
	if inc := s.lookupIncarnation(sandbox); inc != nil && inc.terms != nil {
		for _, term := range inc.terms.list() {
			out = append(out, term.snapshot())
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getTerminal(w http.ResponseWriter, sandbox, id string) {
	if term := s.lookupTerminal(w, sandbox, id); term != nil {
		writeJSON(w, http.StatusOK, term.snapshot())
	}
}

func (s *Server) signalTerminal(w http.ResponseWriter, sandbox, id string, op func(*terminal) error) {
	term := s.lookupTerminal(w, sandbox, id)
	if term == nil {
		return
	}
	if err := op(term); err != nil {
		writeTerminalFailed(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) createTerminal(w http.ResponseWriter, r *http.Request, sandbox string) {
	// Allocation happens before the body is read, as the pool middleware runs first.
	inc, err := s.allocateIncarnation(sandbox)
	if err != nil {
		writeAllocError(w, err)
		return
	}
	if inc == nil || inc.terms == nil {
		writeTerminalFailed(w, errRuntimeEnded)
		return
	}
	body, err := readLimited(r, maxJSONBody)
	if err != nil {
		writeError(w, http.StatusBadRequest, "Invalid JSON body", codeInvalidRequest)
		return
	}
	spec, msg := parseTerminalSpec(body)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg, codeInvalidRequest)
		return
	}
	term, err := inc.terms.create(spec)
	if err != nil {
		writeTerminalFailed(w, err)
		return
	}
	writeJSON(w, http.StatusOK, term.snapshot())
}

// parseTerminalSpec validates a create body in the bridge's order and returns the verbatim
// message of the first failure.
func parseTerminalSpec(body []byte) (termSpec, string) {
	var spec termSpec
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return spec, "Invalid JSON body"
	}
	if _, err := dec.Token(); err != io.EOF {
		return spec, "Invalid JSON body"
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return spec, "Request body must be an object"
	}
	argv, ok := obj["argv"].([]any)
	if !ok || len(argv) == 0 {
		return spec, "argv must be a non-empty string array"
	}
	for _, a := range argv {
		s, ok := a.(string)
		if !ok {
			return spec, "argv must be a non-empty string array"
		}
		spec.argv = append(spec.argv, s)
	}
	if c, present := obj["cwd"]; present {
		s, ok := c.(string)
		if !ok {
			return spec, "cwd must be a string"
		}
		spec.cwd = s
	}
	if e, present := obj["env"]; present {
		m, ok := e.(map[string]any)
		if !ok {
			return spec, "env must be an object"
		}
		spec.env = make(map[string]string, len(m))
		for k, val := range m {
			s, ok := val.(string)
			if !ok {
				return spec, "env values must be strings"
			}
			spec.env[k] = s
		}
	}
	for _, dim := range []struct {
		name string
		dst  *int
	}{{"cols", &spec.cols}, {"rows", &spec.rows}} {
		raw, present := obj[dim.name]
		if !present {
			continue
		}
		num, ok := raw.(json.Number)
		if !ok {
			return spec, dim.name + " must be a positive integer"
		}
		n, ok := positiveInt(string(num))
		if !ok {
			return spec, dim.name + " must be a positive integer"
		}
		*dim.dst = n
	}
	return spec, ""
}

// positiveInt accepts what JavaScript's Number.isInteger(x) && x > 0 accepts for a window size
// (so 80 and 80.0), capped at what a PTY can hold.
func positiveInt(s string) (int, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || f <= 0 || f > math.MaxUint16 {
		return 0, false
	}
	return int(f), true
}

func (s *Server) connectTerminalRoute(w http.ResponseWriter, r *http.Request, sandbox, id string) {
	inc := s.lookupIncarnation(sandbox)
	if inc == nil || inc.terms == nil {
		writeTerminalNotFound(w)
		return
	}
	if !strings.EqualFold(strings.TrimSpace(r.Header.Get("Upgrade")), "websocket") {
		writeError(w, http.StatusBadRequest, "WebSocket upgrade required", codeInvalidRequest)
		return
	}
	if !validTerminalID(id) {
		writeError(w, http.StatusBadRequest, "Invalid terminal ID format", codeInvalidRequest)
		return
	}
	q := r.URL.Query()
	var size [2]int
	for i, name := range []string{"cols", "rows"} {
		if !q.Has(name) {
			continue
		}
		n, ok := positiveInt(q.Get(name))
		if !ok {
			writeError(w, http.StatusBadRequest, name+" must be a positive integer", codeInvalidRequest)
			return
		}
		size[i] = n
	}
	term := inc.terms.get(id)
	if term == nil {
		writeTerminalNotFound(w)
		return
	}
	serveTerminalSocket(w, r, term, q.Get("cursor"), size[0], size[1])
}
