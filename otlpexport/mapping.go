package otlpexport

import (
	"bytes"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"

	"sandscope/client"
	"sandscope/followall"
	"sandscope/record"
	"sandscope/vocab"
)

// Attribute keys. sandscope's own are under "sandscope."; process.exit.code and log.iostream are
// the semantic conventions' names.
const (
	keyBridgeURL   = "sandscope.bridge.url"
	keyDialect     = "sandscope.bridge.dialect"
	keySandbox     = "sandscope.sandbox.id"
	keyIncarnation = "sandscope.incarnation"
	keyInferred    = "sandscope.incarnation.inferred"
	keyRunID       = "sandscope.run.id"
	keyRunKind     = "sandscope.run.kind"
	keyCommand     = "sandscope.command"
	keySession     = "sandscope.session"
	keyState       = "sandscope.state"
	keyExitCode    = "process.exit.code"
	keySignal      = "sandscope.exit.signal"
	keyTimedOut    = "sandscope.exit.timed_out"
	keyGaps        = "sandscope.gaps"
	keyInterrupts  = "sandscope.interruptions"
	keySuspectEnds = "sandscope.suspect_ends"
	keyMarker      = "sandscope.marker"
	keyCursor      = "sandscope.cursor"
	keyGapBytes    = "sandscope.gap.bytes"
	keyReason      = "sandscope.reason"
	keyAttempt     = "sandscope.attempt"
	keyEvidence    = "sandscope.evidence"
	keyPrevInc     = "sandscope.incarnation.previous"
	keyEventID     = "sandscope.record.event"
	keyChunkID     = "sandscope.record.chunk"
	keyIOStream    = "log.iostream"
)

// Marker kinds, as span event names and the sandscope.marker attribute.
const (
	markInterrupted = "interrupted"
	markResumed     = "resumed"
	markGap         = "gap"
	markSuspectEnd  = "suspect end"
	markLost        = "lost"
	markIncarnation = "incarnation changed"
)

// Bridge is what the export says about the bridge a record belongs to.
type Bridge struct {
	URL     string // the bridge URL; credentials, query and fragment are removed before it is sent
	Dialect string // the API it speaks ("v1-preview", "stable")
}

// spanSpec is one run's span before the SDK makes it.
type spanSpec struct {
	run        runRef
	name       string
	start, end time.Time
	attrs      []attribute.KeyValue
	events     []markerSpec
	failed     bool
	status     string
}

// markerSpec is a marker: a span event on its run, and a log record.
type markerSpec struct {
	kind  string
	time  time.Time
	attrs []attribute.KeyValue
}

// logSpec is a log record before the SDK makes it; run nil: not linked to a span.
type logSpec struct {
	run       *runRef
	time      time.Time
	severity  log.Severity
	eventName string
	body      string
	attrs     []attribute.KeyValue
}

// maxMarkersPerRun bounds the span events kept for one run (the log records are all sent).
const maxMarkersPerRun = 256

// mapper folds the record's events in order, as the record does, and turns what changed into
// spans and log records.
type mapper struct {
	bridgeID string
	bridge   Bridge
	base     []attribute.KeyValue // bridge attributes, on every span and log record

	states   map[string]*record.State
	exported map[runRef]string       // the final state word a run's span was last sent with
	markers  map[runRef][]markerSpec // markers of runs, for their spans
	lives    map[string][]incChange  // incarnation changes per sandbox (span events of the runs they cut)
	stable   map[string]string       // the container marker last seen per sandbox (stable)
	seen     map[string]bool         // markers already told (two followers report the same one)
}

type incChange struct {
	at         time.Time
	from, to   string
	inferred   bool
	evidence   string
	eventID    int64
	fromMarker bool // told by a stable container marker (else by the watcher)
}

func newMapper(bridgeID string, b Bridge) *mapper {
	m := &mapper{bridgeID: bridgeID, bridge: b, states: map[string]*record.State{}, exported: map[runRef]string{},
		markers: map[runRef][]markerSpec{}, lives: map[string][]incChange{}, stable: map[string]string{}, seen: map[string]bool{}}
	m.base = []attribute.KeyValue{attribute.String(keyBridgeURL, record.NormalizeURL(b.URL))}
	if b.Dialect != "" {
		m.base = append(m.base, attribute.String(keyDialect, b.Dialect))
	}
	return m
}

// apply folds one event. With emit false (replaying what was sent before a restart) it only
// learns; else it returns the spans and log records the event amounts to.
func (m *mapper) apply(ev record.Event, emit bool) (spans []spanSpec, logs []logSpec) {
	st := m.states[ev.Sandbox]
	if st == nil {
		st = record.NewState(ev.Sandbox)
		m.states[ev.Sandbox] = st
	}
	entity := ev.Entity == record.Process || ev.Entity == record.Terminal
	prevInc := st.Current
	st.Apply(ev)

	if ev.Source == record.FromStable {
		return m.applyStable(st, ev, emit)
	}

	// on a stable bridge the driver's watcher reports the runs it keeps as processes too: the run
	// is one span, the stable run's, and what its followers saw are that span's markers
	stableRun := entity && ev.Entity == record.Process && m.stableRef(st, ev.EntityID) != nil

	// a marker: a log record now, a span event when its run's span is made
	if mk := m.markerOf(st, ev, prevInc); mk != nil {
		var ref *runRef
		if stableRun {
			ref = m.stableRef(st, ev.EntityID)
			if len(m.markers[*ref]) < maxMarkersPerRun {
				m.markers[*ref] = append(m.markers[*ref], *mk)
			}
		} else if entity {
			if e := st.Find(ev.Entity, ev.EntityID); e != nil {
				r := m.refOf(st, e)
				ref = &r
				if len(m.markers[r]) < maxMarkersPerRun {
					m.markers[r] = append(m.markers[r], *mk)
				}
			}
		}
		if emit {
			logs = append(logs, m.markerLog(ev, *mk, ref))
		}
	}

	if entity && !stableRun {
		if e := st.Find(ev.Entity, ev.EntityID); e != nil && ended(e) {
			r := m.refOf(st, e)
			word := finalWord(e)
			if m.exported[r] != word {
				m.exported[r] = word
				if emit {
					spans = append(spans, m.entrySpan(st, e, r, word))
				}
			}
		}
	}
	return spans, logs
}

// recentLife: a container change of this sandbox was already exported within a few seconds of t
// (a stable bridge's change is in the record twice: the container marker, and the driver's
// watcher telling it).
func (m *mapper) recentLife(sandbox string, t time.Time, fromMarker bool) bool {
	l := m.lives[sandbox]
	if len(l) == 0 || l[len(l)-1].fromMarker != fromMarker || !l[len(l)-1].inferred {
		return false
	}
	d := l[len(l)-1].at.Sub(t)
	return d < 5*time.Second && d > -5*time.Second
}

// stableRef is the stable run with this ID that the sandbox's record keeps (nil: none).
func (m *mapper) stableRef(st *record.State, id string) *runRef {
	for i := len(st.Stable.Runs) - 1; i >= 0; i-- {
		if r := st.Stable.Runs[i]; r.ID == id {
			return &runRef{bridge: m.bridgeID, sandbox: st.Sandbox, incarnation: r.Incarnation, kind: string(record.StableRunEntity), id: r.ID}
		}
	}
	return nil
}

// markerOf says whether an event is a marker, and builds it.
func (m *mapper) markerOf(st *record.State, ev record.Event, prevInc client.Incarnation) *markerSpec {
	kind := ""
	var attrs []attribute.KeyValue
	switch ev.Source {
	case record.FromStream, record.FromTerminal:
		switch strings.TrimPrefix(ev.Kind, "terminal ") {
		case "interrupted":
			kind = markInterrupted
		case "resumed":
			kind = markResumed
		case "gap":
			kind = markGap
			attrs = append(attrs, attribute.Int64(keyGapBytes, ev.GapBytes))
		case "suspect end":
			kind = markSuspectEnd
		case "lost":
			kind = markLost
		}
	case record.FromWatch:
		switch {
		case ev.Lost():
			kind = markLost
		case ev.Kind == client.IncarnationChanged.String() && ev.Incarnation.Inferred && m.recentLife(st.Sandbox, ev.Time, true):
			// the stable driver's watcher telling the container marker already exported
		case ev.Kind == client.IncarnationChanged.String():
			kind = markIncarnation
			from := prevInc.Number
			attrs = append(attrs, attribute.String(keyPrevInc, strconv.Itoa(from)),
				attribute.String(keyIncarnation, strconv.Itoa(st.Current.Number)), attribute.Bool(keyInferred, st.Current.Inferred))
			m.lives[st.Sandbox] = append(m.lives[st.Sandbox], incChange{at: ev.Time, from: strconv.Itoa(from),
				to: strconv.Itoa(st.Current.Number), inferred: st.Current.Inferred, evidence: text(strings.Join(ev.Evidence, "; ")), eventID: ev.ID})
		}
	}
	if kind == "" {
		return nil
	}
	if ev.Cursor != "" {
		// a gap or suspect end at one cursor, reported by two followers, is one marker
		key := kind + "\x00" + ev.Sandbox + "\x00" + ev.EntityID + "\x00" + ev.Cursor
		if m.seen[key] {
			return nil
		}
		if len(m.seen) > 1<<16 {
			clear(m.seen)
		}
		m.seen[key] = true
		attrs = append(attrs, attribute.String(keyCursor, text(ev.Cursor)))
	}
	if ev.Reason != "" {
		attrs = append(attrs, attribute.String(keyReason, text(ev.Reason)))
	}
	if ev.Attempt > 0 {
		attrs = append(attrs, attribute.Int(keyAttempt, ev.Attempt))
	}
	var evidence []string
	evidence = append(evidence, ev.Evidence...)
	if ev.Loss != nil {
		evidence = append(evidence, client.DescribeLoss(ev.Loss))
	}
	if ev.Status != nil && kind == markSuspectEnd {
		evidence = append(evidence, "status lookup: "+ev.Status.State)
	}
	if j := strings.Join(evidence, "; "); j != "" && j != ev.Reason && kind != markIncarnation {
		attrs = append(attrs, attribute.String(keyEvidence, text(j)))
	}
	if kind == markIncarnation && len(ev.Evidence) > 0 {
		attrs = append(attrs, attribute.String(keyEvidence, text(strings.Join(ev.Evidence, "; "))))
	}
	attrs = append(attrs, attribute.Int64(keyEventID, ev.ID))
	return &markerSpec{kind: kind, time: ev.Time, attrs: attrs}
}

// markerLog is a marker's log record, worded as sandscope's notifications word it.
func (m *mapper) markerLog(ev record.Event, mk markerSpec, ref *runRef) logSpec {
	sev := log.SeverityWarn
	var body string
	switch mk.kind {
	case markLost:
		sev, body = log.SeverityError, "LOST"
	case markSuspectEnd:
		body = "SUSPECT END: the stream ended but the status lookup says running"
	case markGap:
		body = "GAP: bytes missing"
		if ev.GapBytes > 0 {
			body = fmt.Sprintf("GAP: %d bytes missing", ev.GapBytes)
		}
	case markInterrupted:
		body = "INTERRUPTED: the stream broke off"
	case markResumed:
		sev, body = log.SeverityInfo, "RESUMED"
	case markIncarnation:
		body = "NEW CONTAINER"
		for _, a := range mk.attrs {
			if a.Key == keyIncarnation {
				body = "NEW CONTAINER: incarnation #" + a.Value.AsString()
			}
		}
	}
	for _, a := range mk.attrs {
		if a.Key == keyReason || a.Key == keyEvidence {
			body += " (" + a.Value.AsString() + ")"
		}
	}
	attrs := append(append([]attribute.KeyValue(nil), m.base...), attribute.String(keySandbox, text(ev.Sandbox)), attribute.String(keyMarker, mk.kind))
	if ref != nil {
		attrs = append(attrs, attribute.String(keyRunKind, ref.kind), attribute.String(keyRunID, text(ref.id)), attribute.String(keyIncarnation, ref.incarnation))
	}
	for _, a := range mk.attrs {
		if ref != nil && a.Key == keyIncarnation {
			continue
		}
		attrs = append(attrs, a)
	}
	return logSpec{run: ref, time: mk.time, severity: sev, eventName: "sandscope." + strings.ReplaceAll(mk.kind, " ", "_"), body: body, attrs: attrs}
}

// refOf names an entry's run.
func (m *mapper) refOf(st *record.State, e *record.Entry) runRef {
	inc := e.Incarnation
	return runRef{bridge: m.bridgeID, sandbox: st.Sandbox, incarnation: strconv.Itoa(inc), kind: string(e.Kind), id: e.ID}
}

// ended: the entry reached a state that will not change by itself (it ended, or was lost).
func ended(e *record.Entry) bool {
	if e.Lost {
		return true
	}
	switch e.State() {
	case "", "running":
		return false
	}
	return true
}

// finalWord is the entry's final state in the words every screen uses (LOST, EXITED 3, KILLED
// TERM, …), without the STALE prefix a later container gives it.
func finalWord(e *record.Entry) string {
	if e.Lost {
		return "LOST"
	}
	state, exit, rerr := e.Process.State, e.Process.Exit, e.Process.Error
	if e.Kind == record.Terminal {
		state, exit, rerr = e.Terminal.Status, e.Terminal.Exit, e.Terminal.Error
	}
	_, word, _ := vocab.State(state, exit, rerr)
	return word
}

// entrySpan is a process's or terminal's span.
func (m *mapper) entrySpan(st *record.State, e *record.Entry, r runRef, word string) spanSpec {
	argv := e.Command()
	start, end := e.FirstSeen, e.LastSeen
	state, exit := e.Process.State, e.Process.Exit
	if e.Kind == record.Process {
		if !e.Process.StartedAt.IsZero() {
			start = e.Process.StartedAt
		}
		if e.Process.EndedAt != nil {
			end = *e.Process.EndedAt
		}
	} else {
		state, exit = e.Terminal.Status, e.Terminal.Exit
	}
	if e.Lost && !e.LostAt.IsZero() {
		end = e.LostAt
	}
	if end.Before(start) {
		end = start
	}
	s := spanSpec{run: r, name: string(e.Kind) + " " + exeName(argv), start: start, end: end, status: word}
	s.attrs = append(append(s.attrs, m.base...),
		attribute.String(keySandbox, text(st.Sandbox)),
		attribute.String(keyIncarnation, r.incarnation),
		attribute.Bool(keyInferred, e.Inferred),
		attribute.String(keyRunKind, string(e.Kind)),
		attribute.String(keyRunID, text(e.ID)),
		attribute.String(keyCommand, followall.Summary(argv)),
		attribute.String(keyState, word))
	if exit != nil {
		s.attrs = append(s.attrs, attribute.Int(keyExitCode, exit.Code))
		if exit.Signal != 0 {
			s.attrs = append(s.attrs, attribute.Int(keySignal, exit.Signal))
		}
		if exit.TimedOut {
			s.attrs = append(s.attrs, attribute.Bool(keyTimedOut, true))
		}
	}
	if e.Gaps > 0 {
		s.attrs = append(s.attrs, attribute.Int(keyGaps, e.Gaps))
	}
	if e.Interruptions > 0 {
		s.attrs = append(s.attrs, attribute.Int(keyInterrupts, e.Interruptions))
	}
	if e.SuspectEnds > 0 {
		s.attrs = append(s.attrs, attribute.Int(keySuspectEnds, e.SuspectEnds))
	}
	switch {
	case e.Lost, state == "error":
		s.failed = true
	case state == "reported", state == "ended", state == "interrupted":
		// the driver's words for an ending nothing confirms (SUSPECT END) or an unresolved
		// interruption
		s.failed = true
	case exit != nil && (exit.Code != 0 || exit.Signal != 0 || exit.TimedOut):
		s.failed = true
	}
	s.events = append(s.events, m.markers[r]...)
	lives := m.livesWithin(st.Sandbox, start, end)
	if l := e.Loss; len(lives) == 0 && l != nil && l.Incarnation > 0 && l.Previous > 0 && l.Incarnation != l.Previous {
		// the follower found the run gone before the watcher told the new container: its evidence
		// names both lives
		lives = append(lives, markerSpec{kind: markIncarnation, time: end, attrs: []attribute.KeyValue{
			attribute.String(keyPrevInc, strconv.Itoa(l.Previous)), attribute.String(keyIncarnation, strconv.Itoa(l.Incarnation)),
			attribute.Bool(keyInferred, l.Inferred), attribute.String(keyEvidence, text(client.DescribeLoss(l)))}})
	}
	s.events = append(s.events, lives...)
	return s
}

// livesWithin are the incarnation changes of a sandbox while a run ran (the change that cut a
// LOST run short is at its end).
func (m *mapper) livesWithin(sandbox string, start, end time.Time) []markerSpec {
	var out []markerSpec
	for _, c := range m.lives[sandbox] {
		if c.at.Before(start) || c.at.After(end.Add(time.Second)) {
			continue
		}
		attrs := []attribute.KeyValue{attribute.String(keyPrevInc, c.from), attribute.String(keyIncarnation, c.to), attribute.Bool(keyInferred, c.inferred), attribute.Int64(keyEventID, c.eventID)}
		if c.evidence != "" {
			attrs = append(attrs, attribute.String(keyEvidence, c.evidence))
		}
		out = append(out, markerSpec{kind: markIncarnation, time: c.at, attrs: attrs})
	}
	return out
}

// applyStable handles a stable bridge's entries: a run's state as the stable driver recorded it,
// and the container marker (its change is an incarnation change, inferred).
func (m *mapper) applyStable(st *record.State, ev record.Event, emit bool) (spans []spanSpec, logs []logSpec) {
	if ev.Stable == nil {
		return nil, nil
	}
	switch ev.Kind {
	case record.KindStableMarker:
		prev := m.stable[ev.Sandbox]
		m.stable[ev.Sandbox] = ev.Stable.Marker
		if prev == "" || prev == ev.Stable.Marker || m.recentLife(ev.Sandbox, ev.Time, false) {
			return nil, nil // no change, or the watcher's report of it came first
		}
		mk := markerSpec{kind: markIncarnation, time: ev.Time, attrs: []attribute.KeyValue{attribute.String(keyPrevInc, text(prev)),
			attribute.String(keyIncarnation, text(ev.Stable.Marker)), attribute.Bool(keyInferred, true),
			attribute.String(keyEvidence, "sandscope's marker file in the container changed"), attribute.Int64(keyEventID, ev.ID)}}
		m.lives[ev.Sandbox] = append(m.lives[ev.Sandbox], incChange{at: ev.Time, from: text(prev), to: text(ev.Stable.Marker), inferred: true,
			evidence: "sandscope's marker file in the container changed", eventID: ev.ID, fromMarker: true})
		if emit {
			logs = append(logs, m.markerLog(ev, mk, nil))
		}
	case record.KindStableRun:
		r := ev.Stable.Run
		if r == nil || r.ID == "" {
			return nil, nil
		}
		ref := runRef{bridge: m.bridgeID, sandbox: ev.Sandbox, incarnation: r.Incarnation, kind: string(record.StableRunEntity), id: r.ID}
		kind := ""
		switch client.RunState(r.State) {
		case client.RunLost:
			kind = markLost
		case client.RunInterrupted:
			kind = markInterrupted
		case client.RunUnconfirmed:
			kind = markSuspectEnd
		case client.RunRunning, client.RunStillGoing, "":
			return nil, nil
		}
		word := record.StableStateWord(*r)
		if m.exported[ref] == word {
			return nil, nil
		}
		m.exported[ref] = word
		if kind != "" {
			attrs := []attribute.KeyValue{attribute.Int64(keyEventID, ev.ID)}
			if r.Evidence != "" {
				attrs = append(attrs, attribute.String(keyEvidence, text(r.Evidence)))
			}
			mk := markerSpec{kind: kind, time: r.Updated, attrs: attrs}
			if len(m.markers[ref]) < maxMarkersPerRun {
				m.markers[ref] = append(m.markers[ref], mk)
			}
			if emit {
				logs = append(logs, m.markerLog(ev, mk, &ref))
			}
		}
		if emit {
			spans = append(spans, m.stableSpan(ev.Sandbox, *r, ref, word))
		}
	}
	return spans, logs
}

// stableSpan is a stable run's span.
func (m *mapper) stableSpan(sandbox string, r record.StableRun, ref runRef, word string) spanSpec {
	start, end := r.Started, r.Updated
	if end.Before(start) {
		end = start
	}
	s := spanSpec{run: ref, name: "run " + exeName(r.Argv), start: start, end: end, status: word}
	s.attrs = append(append(s.attrs, m.base...),
		attribute.String(keySandbox, text(sandbox)),
		attribute.String(keyIncarnation, text(r.Incarnation)),
		attribute.Bool(keyInferred, true),
		attribute.String(keyRunKind, string(record.StableRunEntity)),
		attribute.String(keyRunID, text(r.ID)),
		attribute.String(keyCommand, followall.Summary(r.Argv)),
		attribute.String(keyState, word))
	if r.Session != "" {
		s.attrs = append(s.attrs, attribute.String(keySession, text(r.Session)))
	}
	if r.Code != nil {
		s.attrs = append(s.attrs, attribute.Int(keyExitCode, *r.Code))
	}
	switch client.RunState(r.State) {
	case client.RunConfirmed:
		s.failed = r.Code != nil && *r.Code != 0
	default:
		s.failed = true // lost, interrupted, an ending nothing confirms, the bridge's error
	}
	s.events = append(s.events, m.markers[ref]...)
	s.events = append(s.events, m.livesWithin(sandbox, start, end)...)
	return s
}

// outputLogs turns a chunk of captured output into one log record per line, linked to its run.
func (m *mapper) outputLogs(c record.OutputChunk) []logSpec {
	inc := "0"
	if st := m.states[c.Sandbox]; st != nil {
		if e := st.Find(record.Process, c.Process); e != nil {
			inc = strconv.Itoa(e.Incarnation)
		}
	}
	ref := runRef{bridge: m.bridgeID, sandbox: c.Sandbox, incarnation: inc, kind: string(record.Process), id: c.Process}
	stream := "stdout"
	if c.Stream == client.Stderr {
		stream = "stderr"
	}
	// few attributes: a line costs about one record's worth of CPU each, and its span has the rest
	// (bridge, incarnation, command, state)
	base := []attribute.KeyValue{attribute.String(keySandbox, text(c.Sandbox)), attribute.String(keyRunID, text(c.Process)),
		attribute.String(keyIOStream, stream), attribute.Int64(keyChunkID, c.ID)}
	if c.Lost != nil {
		// the record no longer has these bytes: one warning in their place, not silence
		body := fmt.Sprintf("%d bytes of captured output lost: %v", c.LostBytes, c.Lost)
		return []logSpec{{run: &ref, time: c.Time, severity: log.SeverityWarn, eventName: "", body: validUTF8([]byte(body)), attrs: base}}
	}
	data := c.Data
	var out []logSpec
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		out = append(out, logSpec{run: &ref, time: c.Time, severity: log.SeverityInfo, eventName: "", body: validUTF8(line), attrs: base})
	}
	return out
}

// validUTF8 is the line as OTLP can carry it (a protobuf string must be UTF-8): invalid bytes
// become U+FFFD; nothing else changes (a collector is not a terminal).
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// text is a bridge-provided string as an attribute: escapes and controls made visible.
func text(s string) string { return vocab.Text(s) }

// exeName is the program a run ran (a shell script's name for "sh -c SCRIPT NAME"), for the span
// name: low in cardinality, unlike the run ID.
func exeName(argv []string) string {
	if len(argv) == 0 {
		return "(unknown)"
	}
	name := path.Base(argv[0])
	switch name {
	case "sh", "bash", "dash", "zsh", "ash":
		if len(argv) >= 4 && argv[1] == "-c" {
			name = path.Base(argv[3])
		}
	}
	return text(name)
}
