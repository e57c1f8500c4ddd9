package localbridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"sandscope/localbridge/seqlog"
)

// execStream is one open POST /exec response. The test hooks end it early: fabricate ends it with
// the exit-code-less completion ({"exit_code":0}) while the process runs on; cut drops the body
// without an event, as a cut between the Worker and the client does.
type execStream struct {
	fabricate chan struct{}
	cut       chan struct{}
}

var safeShellWord = regexp.MustCompile(`^[A-Za-z0-9@%+=:,./-]+$`)

// shellQuoteStable quotes one word as the stable bridge does: bare when it only has safe
// characters, else ANSI-C $'…' with \\, \', \n, \r and \t escaped.
func shellQuoteStable(s string) string {
	if safeShellWord.MatchString(s) {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	return "$'" + r.Replace(s) + "'"
}

// errArgvItem means an argv item the bridge's quoting throws on (text 500).
var errArgvItem = errors.New("argv item cannot be quoted")

// stableArgvWord turns one JSON argv item into its shell word the way the bridge's
// argv.map(shellQuote).join(' ') does: strings are quoted; other items are tested as
// String(item) and kept as that text when safe, else the quoting throws; null is an empty word.
func stableArgvWord(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", errArgvItem
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", errArgvItem
		}
		return shellQuoteStable(s), nil
	}
	if string(raw) == "null" {
		return "", nil // the regex tests "null" (safe); join writes null as ""
	}
	text, ok := jsString(raw)
	if !ok || !safeShellWord.MatchString(text) {
		return "", errArgvItem
	}
	return text, nil
}

// jsString is JavaScript's String(v) for a JSON value (arrays join with ",", null and nested
// nulls are "", objects are "[object Object]").
func jsString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err == nil
	case '{':
		return "[object Object]", true
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return "", false
		}
		parts := make([]string, len(items))
		for i, it := range items {
			if string(bytes.TrimSpace(it)) == "null" {
				continue
			}
			s, ok := jsString(it)
			if !ok {
				return "", false
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), true
	case 't', 'f', 'n':
		return string(raw), true
	default:
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return "", false
		}
		return jsNumber(f), true
	}
}

// jsNumber formats a float as JavaScript's Number.prototype.toString does for the usual cases.
func jsNumber(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case math.IsNaN(f):
		return "NaN"
	case f == 0:
		return "0"
	}
	a := math.Abs(f)
	if a >= 1e21 || a < 1e-6 {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		// Go writes e+21 / e-07; JavaScript writes e+21 / e-7.
		if i := strings.IndexByte(s, 'e'); i >= 0 {
			mant, exp := s[:i], s[i+1:]
			sign := exp[0]
			exp = strings.TrimLeft(exp[1:], "0")
			if exp == "" {
				exp = "0"
			}
			s = mant + "e" + string(sign) + exp
		}
		return s
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// StableShellCommand is the `bash -c` string a stable bridge builds from an /exec argv (its JSON
// items): argv.map(shellQuote).join(' '). An item the bridge's quoting throws on (an object, an
// empty array) is an error (the bridge answers text 500).
func StableShellCommand(items []json.RawMessage) (string, error) {
	words := make([]string, len(items))
	for i, it := range items {
		word, err := stableArgvWord(it)
		if err != nil {
			return "", err
		}
		words[i] = word
	}
	return strings.Join(words, " "), nil
}

// handleStableExec: POST /exec (already allocated) → SSE of stdout/stderr/exit/error events.
func (s *Server) handleStableExec(w http.ResponseWriter, r *http.Request, inc *incarnation) {
	body, err := readLimited(r, maxJSONBody)
	trimmed := trimJSONSpace(body)
	if err != nil || len(trimmed) == 0 || !json.Valid(trimmed) {
		writeError(w, http.StatusBadRequest, "Invalid JSON body", "invalid_request")
		return
	}
	if bytes.Equal(trimmed, []byte("null")) {
		writeInternalError(w) // body.argv of null throws
		return
	}
	var fields map[string]json.RawMessage
	if trimmed[0] == '{' {
		_ = json.Unmarshal(trimmed, &fields)
	}
	var items []json.RawMessage
	if raw, ok := fields["argv"]; !ok || len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		writeError(w, http.StatusBadRequest, "argv must be a non-empty array", "invalid_request")
		return
	}
	sessionID := r.Header.Get("Session-Id")
	if sessionID != "" && !validStableSessionID(sessionID) {
		writeError(w, http.StatusBadRequest, "Invalid session ID format", "invalid_request")
		return
	}
	command, err := StableShellCommand(items)
	if err != nil {
		writeInternalError(w)
		return
	}
	cwd := ""
	if raw, ok := fields["cwd"]; ok && len(raw) > 0 && raw[0] == '"' {
		var c string
		_ = json.Unmarshal(raw, &c)
		resolved, ok := resolveWorkspacePath(c)
		if !ok {
			writeError(w, http.StatusForbidden, "cwd must resolve to a location within /workspace", "invalid_request")
			return
		}
		cwd = resolved
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	out := &sseOut{w: w, rc: rc}

	argv := []string{"bash", "-c", command}
	runCwd := "/workspace"
	if cwd != "" {
		runCwd = cwd
	}
	if sessionID != "" {
		sess, err := s.stableSession(inc, sessionID, "", nil)
		if err != nil {
			out.event("error", errorEventJSON(err.Error(), "exec_error"))
			return
		}
		argv = []string{"bash", "-c", sessionWrapper(sess.dir, cwd != ""), "bash", command}
	}
	p, err := s.launch(inc, argv, runCwd, workspaceEnv(inc), 0)
	if err != nil {
		out.event("error", errorEventJSON(err.Error(), "exec_error"))
		return
	}

	st := &execStream{fabricate: make(chan struct{}), cut: make(chan struct{})}
	rt := inc.stableState()
	rt.mu.Lock()
	rt.streams[st] = struct{}{}
	rt.mu.Unlock()
	defer func() {
		rt.mu.Lock()
		delete(rt.streams, st)
		rt.mu.Unlock()
	}()
	s.streamExec(r.Context(), out, p, st, sessionID != "")
}

// sessionWrapper runs "$1" in the session's saved cwd and environment and saves them again when
// the shell exits (exit included), as the container's persistent session shell keeps them.
// keepCwd: the request named a cwd, which the launch already applied.
func sessionWrapper(dir string, keepCwd bool) string {
	q := shellQuoteStable(dir)
	cd := `cd "$(cat ` + q + `/cwd)" 2>/dev/null; `
	if keepCwd {
		cd = ""
	}
	return `. ` + q + `/env 2>/dev/null; ` + cd +
		`trap '__sandscope_rc=$?; { pwd > ` + q + `/cwd; export -p > ` + q + `/env; } 2>/dev/null; exit $__sandscope_rc' EXIT; ` +
		`eval "$1"`
}

// workspaceEnv tells stable processes where /workspace is on this machine: their paths are the
// host's, so a script that writes under /workspace reads $SANDSCOPE_WORKSPACE instead (a local
// bridge extension; the real container has /workspace itself).
func workspaceEnv(inc *incarnation) map[string]string {
	return map[string]string{"SANDSCOPE_WORKSPACE": inc.workspace}
}

func errorEventJSON(msg, code string) []byte {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}{msg, code})
	return b
}

// sseOut writes stable SSE events: exactly "event: NAME\ndata: PAYLOAD\n\n".
type sseOut struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	failed bool
}

func (o *sseOut) event(name string, data []byte) {
	if o.failed {
		return
	}
	var buf bytes.Buffer
	buf.Grow(len(name) + len(data) + 16)
	buf.WriteString("event: ")
	buf.WriteString(name)
	buf.WriteString("\ndata: ")
	buf.Write(data)
	buf.WriteString("\n\n")
	if _, err := o.w.Write(buf.Bytes()); err != nil {
		o.failed = true
		return
	}
	if err := o.rc.Flush(); err != nil {
		o.failed = true
	}
}

func (o *sseOut) output(kind string, text string) {
	if text == "" {
		return
	}
	o.event(kind, []byte(base64.StdEncoding.EncodeToString([]byte(text))))
}

// streamExec relays the process's output as text events until it ends (exit), the incarnation
// ends (error), a hook fabricates or cuts, or the client leaves (the process runs on).
func (s *Server) streamExec(ctx context.Context, out *sseOut, p *process, st *execStream, session bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var fakeAfter <-chan time.Time
	if d := s.cfg.StableFakeCompletionAfter; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		fakeAfter = t.C
	}
	type next struct {
		evs []seqlog.Event
		err error
	}
	reader := p.log.Subscribe(0, true)
	ch := make(chan next)
	go func() {
		defer close(ch)
		var buf []seqlog.Event
		for {
			evs, err := reader.NextBatch(ctx, buf[:0], 64)
			select {
			case ch <- next{append([]seqlog.Event(nil), evs...), err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
			buf = evs
		}
	}()
	dec := map[seqlog.Kind]*textDecoder{seqlog.Stdout: {}, seqlog.Stderr: {}}
	lines := map[seqlog.Kind]*lineFramer{seqlog.Stdout: {}, seqlog.Stderr: {}}
	emit := func(kind seqlog.Kind, text string) {
		if !session {
			out.output(kind.String(), text)
			return
		}
		for _, l := range lines[kind].push(text) {
			out.output(kind.String(), l)
		}
	}
	flush := func() {
		for _, k := range []seqlog.Kind{seqlog.Stdout, seqlog.Stderr} {
			emit(k, dec[k].flush())
			if session {
				if l := lines[k].flush(); l != "" {
					out.output(k.String(), l)
				}
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-st.cut:
			panic(http.ErrAbortHandler)
		case <-st.fabricate:
			flush()
			out.event("exit", []byte(`{"exit_code":0}`))
			return
		case <-fakeAfter:
			flush()
			out.event("exit", []byte(`{"exit_code":0}`))
			return
		case n, ok := <-ch:
			if !ok {
				return
			}
			for _, ev := range n.evs {
				switch ev.Kind {
				case seqlog.Stdout, seqlog.Stderr:
					emit(ev.Kind, dec[ev.Kind].decode(ev.Data))
				case seqlog.Final:
					flush()
					fe, _ := ev.Final.(finalEvent)
					if fe.exit != nil {
						out.event("exit", []byte(`{"exit_code":`+strconv.Itoa(fe.exit.Code)+`}`))
					} else {
						msg := "Stream ended without completion event"
						if fe.err != nil {
							msg = fe.err.Message
						}
						out.event("error", errorEventJSON(msg, "exec_error"))
					}
					return
				}
			}
			if n.err != nil {
				if s.closing.Load() {
					// the bridge went away, not the container: no "Network connection lost."
					panic(http.ErrAbortHandler)
				}
				if ctx.Err() != nil {
					return
				}
				// The container went away under the stream (stop, replace, delete).
				flush()
				out.event("error", errorEventJSON("Network connection lost.", "exec_error"))
				return
			}
		}
	}
}

// textDecoder turns a byte stream into text as the container's UTF-8 decoder does: a chunk never
// splits a code point (an incomplete sequence waits for the next chunk), and each maximal invalid
// subsequence becomes one U+FFFD.
type textDecoder struct{ carry []byte }

func (d *textDecoder) decode(p []byte) string {
	if len(d.carry) > 0 {
		p = append(d.carry, p...)
		d.carry = nil
	}
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); {
		c := p[i]
		if c < 0x80 {
			b.WriteByte(c)
			i++
			continue
		}
		n, lo, hi := utf8SeqInfo(c)
		if n == 0 {
			b.WriteRune(utf8.RuneError)
			i++
			continue
		}
		j := 1
		for ; j < n && i+j < len(p); j++ {
			cb := p[i+j]
			l, h := byte(0x80), byte(0xBF)
			if j == 1 {
				l, h = lo, hi
			}
			if cb < l || cb > h {
				break
			}
		}
		switch {
		case j == n:
			b.Write(p[i : i+n])
			i += n
		case i+j == len(p):
			// Incomplete at the end of the chunk: wait for more.
			d.carry = append([]byte(nil), p[i:]...)
			return b.String()
		default:
			b.WriteRune(utf8.RuneError)
			i += j
		}
	}
	return b.String()
}

// flush ends the stream: an incomplete sequence left over becomes U+FFFD.
func (d *textDecoder) flush() string {
	if len(d.carry) == 0 {
		return ""
	}
	d.carry = nil
	return string(utf8.RuneError)
}

// utf8SeqInfo gives the length of the sequence a lead byte starts and the valid range of its
// second byte (n = 0: not a lead byte).
func utf8SeqInfo(c byte) (n int, lo, hi byte) {
	switch {
	case c >= 0xC2 && c <= 0xDF:
		return 2, 0x80, 0xBF
	case c == 0xE0:
		return 3, 0xA0, 0xBF
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		return 3, 0x80, 0xBF
	case c == 0xED:
		return 3, 0x80, 0x9F
	case c == 0xF0:
		return 4, 0x90, 0xBF
	case c >= 0xF1 && c <= 0xF3:
		return 4, 0x80, 0xBF
	case c == 0xF4:
		return 4, 0x80, 0x8F
	}
	return 0, 0, 0
}

// lineFramer relabels session output line by line: one piece per complete line, NUL bytes dropped,
// and an unterminated last line gets a "\n" at the end.
type lineFramer struct{ partial strings.Builder }

func (f *lineFramer) push(text string) []string {
	text = strings.ReplaceAll(text, "\x00", "")
	var out []string
	for {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			f.partial.WriteString(text)
			return out
		}
		f.partial.WriteString(text[:i+1])
		out = append(out, f.partial.String())
		f.partial.Reset()
		text = text[i+1:]
	}
}

func (f *lineFramer) flush() string {
	if f.partial.Len() == 0 {
		return ""
	}
	s := f.partial.String() + "\n"
	f.partial.Reset()
	return s
}

// CompleteWithoutExit ends every open /exec stream of the sandbox the way a 0.12 container's
// `complete` without an exit code does: the bridge writes {"exit_code":0} and closes the body,
// while the processes run on. It returns how many streams it ended.
func (s *Server) CompleteWithoutExit(id string) int {
	return s.endStreams(id, func(st *execStream) { close(st.fabricate) })
}

// CutExecStreams drops every open /exec response body of the sandbox without an event, as a cut
// between the Worker and the client does; the processes run on. It returns how many it cut.
func (s *Server) CutExecStreams(id string) int {
	return s.endStreams(id, func(st *execStream) { close(st.cut) })
}

func (s *Server) endStreams(id string, end func(*execStream)) int {
	inc := s.lookupIncarnation(id)
	if inc == nil {
		return 0
	}
	rt := inc.stableState()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	n := 0
	for st := range rt.streams {
		end(st)
		delete(rt.streams, st)
		n++
	}
	return n
}

// OpenExecStreams is how many /exec responses of the sandbox are open.
func (s *Server) OpenExecStreams(id string) int {
	inc := s.lookupIncarnation(id)
	if inc == nil {
		return 0
	}
	rt := inc.stableState()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return len(rt.streams)
}
