package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"sandscope/client"
	"sandscope/internal/buildinfo"
	"sandscope/sanitize"
	"sandscope/vocab"
)

// ReportSchema names the JSON report's schema; it changes when a field changes meaning or goes.
const ReportSchema = "sandscope.report/v1"

// ReportOptions says what a report covers and what it says about the bridge.
type ReportOptions struct {
	Sandbox string
	// Entity is a process or terminal ID (or a unique prefix of one); "" reports the whole sandbox.
	Entity  string
	Version string // sandscope's version (empty: this build's, from internal/buildinfo)
	Dialect string // the bridge API ("v1-preview", "stable", "unknown")
	Kind    string // "local (embedded)", "local (serve)", "remote"
	Host    string // the bridge URL's host, only when the user asked for it
	Lines   int    // output lines shown before each incident (default 10)
	Now     time.Time
}

// Report is a triage report. Every string in it that came from a bridge or a process is
// sanitised (no escape sequence, control character or bidi override survives).
type Report struct {
	Schema      string    `json:"schema"`
	GeneratedAt time.Time `json:"generatedAt"`
	Sandscope   string    `json:"sandscopeVersion"`
	Bridge      struct {
		Dialect string `json:"dialect"`
		Kind    string `json:"kind"`
		Host    string `json:"host,omitempty"`
	} `json:"bridge"`
	Sandbox      string           `json:"sandbox"`
	Subject      *ReportEntity    `json:"subject,omitempty"`
	Running      *bool            `json:"running"`
	Incarnation  int              `json:"incarnation"`
	Incarnations []ReportInc      `json:"incarnations"`
	Entities     []ReportEntity   `json:"entities"`
	Timeline     []ReportRow      `json:"timeline"`
	Incidents    []ReportIncident `json:"incidents"`
	Notices      []string         `json:"notices,omitempty"`
}

// ReportInc is one incarnation and the evidence for its boundary.
type ReportInc struct {
	Number     int       `json:"number"`
	Inferred   bool      `json:"inferred"`
	FirstSeen  time.Time `json:"firstSeen"`
	LastSeen   time.Time `json:"lastSeen"`
	Evidence   []string  `json:"evidence"`
	EarlierRun bool      `json:"earlierRun"`
}

// ReportEntity is a process or terminal.
type ReportEntity struct {
	Kind        string         `json:"kind"` // process, terminal
	ID          string         `json:"id"`
	State       string         `json:"state"` // RUNNING, EXITED 0, KILLED TERM, LOST, STALE #1 · EXITED 0, …
	Incarnation int            `json:"incarnation"`
	Command     []string       `json:"command"`
	Cwd         string         `json:"cwd,omitempty"`
	EnvNames    []string       `json:"envNames,omitempty"`
	FirstSeen   time.Time      `json:"firstSeen"`
	LastSeen    time.Time      `json:"lastSeen"`
	Lost        bool           `json:"lost"`
	Stale       bool           `json:"stale"`
	Evidence    []string       `json:"evidence,omitempty"`
	EarlierRun  bool           `json:"earlierRun"`
	Capture     *ReportCapture `json:"capture,omitempty"`
}

// ReportCapture summarises captured output.
type ReportCapture struct {
	Began       time.Time `json:"began"`
	EarlierGone bool      `json:"earlierGone"`
	GoneReason  string    `json:"goneReason,omitempty"`
	Bytes       int64     `json:"bytes"`
	Dropped     int64     `json:"dropped"`
	Ended       string    `json:"ended,omitempty"`
}

// ReportRow is one line of the timeline.
type ReportRow struct {
	Time       time.Time `json:"time"`
	Entity     string    `json:"entity,omitempty"` // "process ID", "terminal ID", "" for the sandbox
	What       string    `json:"what"`
	Evidence   string    `json:"evidence,omitempty"`
	Cursor     string    `json:"cursor,omitempty"`
	EarlierRun bool      `json:"earlierRun"`
}

// ReportIncident is an interruption, gap, suspect end, ending or loss, with the output before it.
type ReportIncident struct {
	ReportRow
	Kind      string   `json:"kind"`
	LastLines []string `json:"lastLines"`
	LinesNote string   `json:"linesNote,omitempty"` // why there are no lines
}

// EntityError says the report's Entity matches no entry, or several.
type EntityError struct {
	Entity  string
	Matches []string
}

func (e *EntityError) Error() string {
	if len(e.Matches) == 0 {
		return fmt.Sprintf("no process or terminal %q in the record", e.Entity)
	}
	return fmt.Sprintf("%q matches %d entries: %s", e.Entity, len(e.Matches), strings.Join(e.Matches, ", "))
}

func safe(s string) string  { return sanitize.Message(s).String() }
func label(s string) string { return sanitize.Label(s).String() }

func safeAll(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		out = append(out, safe(s))
	}
	return out
}

// BuildReport assembles the report of a sandbox (or of one process or terminal in it) from the
// record.
func (r *Record) BuildReport(o ReportOptions) (*Report, error) {
	if o.Lines <= 0 {
		o.Lines = 10
	}
	if o.Now.IsZero() {
		o.Now = r.now()
	}
	if err := r.Flush(); err != nil {
		return nil, err
	}
	events, err := r.Events(o.Sandbox, "")
	if err != nil {
		return nil, err
	}
	st := r.stateOf(o.Sandbox, events)
	if len(events) == 0 {
		return nil, fmt.Errorf("the record has nothing on sandbox %s", o.Sandbox)
	}
	if o.Version == "" {
		o.Version = buildinfo.Version()
	}
	// every list is a JSON list, never null: `jq '.incidents[]'` works on a report without any
	rep := &Report{Schema: ReportSchema, GeneratedAt: o.Now.UTC(), Sandscope: label(o.Version), Sandbox: label(o.Sandbox),
		Running: st.Running, Incarnation: st.Current.Number, Notices: safeAll(r.Notices()),
		Incarnations: []ReportInc{}, Entities: []ReportEntity{}, Timeline: []ReportRow{}, Incidents: []ReportIncident{}}
	rep.Bridge.Dialect, rep.Bridge.Kind, rep.Bridge.Host = label(o.Dialect), label(o.Kind), label(o.Host)

	var subject *Entry
	if o.Entity != "" {
		var matches []*Entry
		seen := map[string]bool{}
		for _, e := range append(append([]*Entry(nil), st.Processes...), st.Terminals...) {
			if client.IDMatches(e.ID, o.Entity) && !seen[e.ID] {
				seen[e.ID] = true
				matches = append(matches, e)
			}
		}
		for _, run := range st.Stable.Runs {
			if client.IDMatches(run.ID, o.Entity) && !seen[run.ID] {
				seen[run.ID] = true
				matches = append(matches, &Entry{Kind: StableRunEntity, ID: run.ID})
			}
		}
		for _, e := range matches {
			if e.ID == o.Entity {
				matches = []*Entry{e}
				break
			}
		}
		if len(matches) == 1 && matches[0].Kind == StableRunEntity {
			o.Entity = matches[0].ID
		}
		if len(matches) != 1 {
			ids := []string{}
			for _, e := range matches {
				ids = append(ids, label(e.ID))
			}
			return nil, &EntityError{Entity: o.Entity, Matches: ids}
		}
		subject = matches[0]
	}

	for _, inc := range st.Incarnations {
		rep.Incarnations = append(rep.Incarnations, ReportInc{Number: inc.Number, Inferred: inc.Inferred, FirstSeen: inc.FirstSeen.UTC(),
			LastSeen: inc.LastSeen.UTC(), Evidence: safeAll(inc.Evidence), EarlierRun: inc.Earlier})
	}
	// A stable bridge reports no incarnation: the containers sandscope's marker file told apart
	// are its incarnations, inferred.
	markers := stableMarkers(events)
	if len(st.Incarnations) == 0 {
		for _, m := range markers {
			rep.Incarnations = append(rep.Incarnations, m.inc)
		}
		if n := len(markers); n > 0 {
			rep.Incarnation = markers[n-1].inc.Number
		}
	}
	captures := map[string]Capture{}
	for _, e := range append(append([]*Entry(nil), st.Processes...), st.Terminals...) {
		re := r.reportEntity(st, e, captures)
		if subject != nil && e == subject {
			s := re
			rep.Subject = &s
		}
		rep.Entities = append(rep.Entities, re)
	}

	for _, run := range st.Stable.Runs {
		re := stableReportEntity(run)
		wasSubject := false
		// The stable driver's watcher also reports its runs as processes: one run is one entity,
		// the run's (its recorder's evidence), placed in the container the process entry names.
		if e := st.Find(Process, run.ID); e != nil {
			if re.Incarnation == 0 {
				re.Incarnation, re.Stale = e.Incarnation, st.Stale(e.Incarnation) && !re.Lost
			}
			for i := range rep.Entities {
				if rep.Entities[i].Kind == string(Process) && rep.Entities[i].ID == re.ID {
					rep.Entities = append(rep.Entities[:i], rep.Entities[i+1:]...)
					break
				}
			}
			if rep.Subject != nil && rep.Subject.Kind == string(Process) && rep.Subject.ID == re.ID {
				rep.Subject, wasSubject = nil, true // the run's entity takes its place
			}
		}
		if len(st.Incarnations) == 0 {
			for _, m := range markers {
				if run.Incarnation != "" && m.marker == run.Incarnation {
					re.Incarnation = m.inc.Number
					re.Stale = m.inc.Number < rep.Incarnation && !re.Lost
				}
			}
		}
		if c, err := r.Captured(st.Sandbox, run.ID); err == nil && c.Found {
			captures[run.ID] = c
			re.Capture = &ReportCapture{Began: c.Began.UTC(), EarlierGone: c.EarlierGone, GoneReason: safe(c.GoneReason), Bytes: c.Bytes, Dropped: c.Dropped, Ended: safe(c.Ended)}
		}
		if wasSubject || o.Entity != "" && run.ID == o.Entity {
			s := re
			rep.Subject = &s
		}
		rep.Entities = append(rep.Entities, re)
	}

	runStates := map[string]string{} // a stable run's state at its last event: an incident is a change
	for _, ev := range events {
		if subject != nil && ev.EntityID != "" && ev.EntityID != subject.ID {
			continue
		}
		row := reportRow(ev)
		rep.Timeline = append(rep.Timeline, row)
		kind := incidentKind(ev)
		if ev.Source == FromStable && ev.Kind == KindStableRun && ev.Stable != nil && ev.Stable.Run != nil {
			run := ev.Stable.Run
			if runStates[run.ID] == run.State {
				kind = ""
			}
			runStates[run.ID] = run.State
		}
		if kind != "" {
			inc := ReportIncident{ReportRow: row, Kind: kind, LastLines: []string{}}
			if ev.EntityID == "" {
				inc.LinesNote = ""
			} else if ev.Entity == Process || ev.Entity == StableRunEntity {
				c, ok := captures[ev.EntityID]
				if !ok {
					c, _ = r.Captured(ev.Sandbox, ev.EntityID)
					captures[ev.EntityID] = c
				}
				inc.LastLines, inc.LinesNote = lastLines(c, ev, o.Lines)
			} else {
				inc.LinesNote = "terminal output is not captured"
			}
			rep.Incidents = append(rep.Incidents, inc)
		}
	}
	return rep, nil
}

func (r *Record) reportEntity(st *State, e *Entry, captures map[string]Capture) ReportEntity {
	re := ReportEntity{Kind: string(e.Kind), ID: label(e.ID), Incarnation: e.Incarnation, FirstSeen: e.FirstSeen.UTC(),
		LastSeen: e.LastSeen.UTC(), Lost: e.Lost, Stale: st.Stale(e.Incarnation), Evidence: safeAll(e.Evidence), EarlierRun: e.Earlier}
	for _, a := range e.Command() {
		re.Command = append(re.Command, label(a))
	}
	if re.Command == nil {
		re.Command = []string{}
	}
	if e.Kind == Process {
		re.Cwd = label(e.Process.Cwd)
	} else {
		re.Cwd = label(e.Terminal.Cwd)
	}
	if e.Launch != nil {
		for _, n := range e.Launch.EnvNames {
			re.EnvNames = append(re.EnvNames, label(n))
		}
		if re.Cwd == "" {
			re.Cwd = label(e.Launch.Cwd)
		}
	}
	re.State = StateWord(st, e)
	if e.Kind == Process {
		c, err := r.Captured(st.Sandbox, e.ID)
		if err == nil && c.Found {
			captures[e.ID] = c
			re.Capture = &ReportCapture{Began: c.Began.UTC(), EarlierGone: c.EarlierGone, GoneReason: safe(c.GoneReason), Bytes: c.Bytes, Dropped: c.Dropped, Ended: safe(c.Ended)}
		}
	}
	return re
}

// StateWord is how sandscope words an entry's state: RUNNING, EXITED n, KILLED SIG, TIMED OUT,
// ERROR code, LOST, STALE #n · <last state>.
func StateWord(st *State, e *Entry) string {
	state, exit, rerr := e.Process.State, e.Process.Exit, e.Process.Error
	if e.Kind == Terminal {
		state, exit, rerr = e.Terminal.Status, e.Terminal.Exit, e.Terminal.Error
	}
	_, word, _ := vocab.State(state, exit, rerr) // the words every screen uses
	switch {
	case e.Lost:
		return "LOST"
	case st.Stale(e.Incarnation):
		return fmt.Sprintf("STALE #%d · %s", e.Incarnation, word)
	}
	return word
}

func entityName(ev Event) string {
	if ev.EntityID == "" {
		return ""
	}
	return string(ev.Entity) + " " + label(ev.EntityID)
}

// reportRow words one event for the timeline.
func reportRow(ev Event) ReportRow {
	row := ReportRow{Time: ev.Time.UTC(), Entity: entityName(ev), Cursor: label(ev.Cursor), EarlierRun: ev.Earlier}
	var what, evidence []string
	switch ev.Source {
	case FromWatch, FromLookup:
		what = append(what, ev.Kind)
		if ev.Source == FromLookup {
			what = []string{"looked up:", lookupWord(ev.Kind)}
		}
		state := ""
		switch {
		case ev.Process != nil:
			state = ev.Process.State
		case ev.Terminal != nil:
			state = ev.Terminal.Status
		}
		switch {
		case state == "":
		case ev.Kind == client.ProcessVanished.String() || ev.Kind == client.TerminalVanished.String():
			what = append(what, "(was "+label(state)+")")
		default:
			what = append(what, label(state))
		}
		if ev.Kind == client.IncarnationChanged.String() {
			what = []string{fmt.Sprintf("incarnation #%d → #%d", ev.Previous.Number, ev.Incarnation.Number)}
			if ev.Incarnation.Inferred {
				what = append(what, "(inferred)")
			}
		}
		if ev.Lost() {
			what = append(what, "→ LOST")
		}
		evidence = ev.Evidence
		if ev.Err != "" {
			evidence = append(evidence, ev.Err)
		}
	case FromStream, FromTerminal:
		what = append(what, "stream "+strings.TrimPrefix(ev.Kind, "terminal "))
		if ev.Attempt > 0 {
			what = append(what, fmt.Sprintf("(attempt %d)", ev.Attempt))
		}
		if ev.Kind == client.Gap.String() {
			switch {
			case ev.GapBytes > 0:
				what = append(what, fmt.Sprintf("of %d bytes", ev.GapBytes))
			case ev.GapBytes < 0:
				what = append(what, "(size unknown)")
			}
		}
		if ev.Reason != "" {
			evidence = append(evidence, ev.Reason)
		}
		if ev.Status != nil {
			evidence = append(evidence, "status lookup: "+ev.Status.State)
		}
		if ev.Loss != nil {
			evidence = append(evidence, client.DescribeLoss(ev.Loss))
		}
		if ev.Exit != nil {
			evidence = append(evidence, fmt.Sprintf("exit code %d", ev.Exit.Code))
		}
		if ev.Err != "" {
			evidence = append(evidence, ev.Err)
		}
	case FromAction:
		if a := ev.Action; a != nil {
			what = append(what, "user: "+a.Kind)
			if a.Detail != "" {
				what = append(what, a.Detail)
			}
			if a.Result != "" {
				what = append(what, "→ "+a.Result)
			}
			evidence = append(evidence, "outcome: "+a.Outcome)
		}
	case FromLaunch:
		what = append(what, "launched by sandscope")
		if l := ev.Launch; l != nil {
			evidence = append(evidence, "argv "+ShellJoin(l.Argv))
			if l.Cwd != "" {
				evidence = append(evidence, "cwd "+l.Cwd)
			}
			if len(l.EnvNames) > 0 {
				evidence = append(evidence, "env "+strings.Join(l.EnvNames, ","))
			}
		}
	case FromCapture:
		what = append(what, ev.Kind)
		evidence = append(evidence, ev.Reason)
	case FromStable:
		what, evidence = stableRow(ev)
	}
	seen := map[string]bool{}
	uniq := evidence[:0]
	for _, e := range evidence {
		if e != "" && !seen[e] {
			seen[e] = true
			uniq = append(uniq, e)
		}
	}
	row.What = safe(strings.Join(what, " "))
	row.Evidence = safe(strings.Join(uniq, "; "))
	return row
}

// lookupWord names what a lookup found (FromLookup events use the watcher's kinds, but a lookup
// saw a state, not a change).
func lookupWord(kind string) string {
	switch kind {
	case client.SandboxStarted.String():
		return "sandbox running"
	case client.SandboxStopped.String():
		return "sandbox stopped"
	case client.ProcessAppeared.String(), client.ProcessChanged.String():
		return "process"
	case client.TerminalAppeared.String(), client.TerminalChanged.String():
		return "terminal"
	}
	return kind
}

// incidentKind says whether an event is an incident worth the output before it. A stable run's
// ending is one in the preview's words: a confirmed exit "ended", LOST "lost", a reported but
// unconfirmed exit code or an ending without a status "suspect end", the bridge's error event
// "error", a stream that broke off "interrupted".
func incidentKind(ev Event) string {
	if ev.Source == FromStable {
		if ev.Kind != KindStableRun || ev.Stable == nil || ev.Stable.Run == nil {
			return ""
		}
		switch client.RunState(ev.Stable.Run.State) {
		case client.RunConfirmed:
			return "ended"
		case client.RunLost:
			return "lost"
		case client.RunUnconfirmed:
			return "suspect end"
		case client.RunErrored:
			return "error"
		case client.RunInterrupted:
			return "interrupted"
		}
		return ""
	}
	if ev.Source == FromWatch || ev.Source == FromLookup {
		if ev.Lost() {
			return "lost"
		}
		// a lookup that finds the sandbox stopped saw a state, not the stop
		if ev.Kind == client.IncarnationChanged.String() || (ev.Kind == client.SandboxStopped.String() && ev.Source == FromWatch) {
			return "container"
		}
		return ""
	}
	if ev.Source != FromStream && ev.Source != FromTerminal {
		return ""
	}
	switch strings.TrimPrefix(ev.Kind, "terminal ") {
	case "interrupted", "gap", "suspect end", "ended", "lost", "failed", "exited", "error":
		return strings.TrimPrefix(ev.Kind, "terminal ")
	}
	return ""
}

// lastLines is the last n lines of captured output before an event: up to the chunk with the
// event's cursor, else up to the event's time.
func lastLines(c Capture, ev Event, n int) ([]string, string) {
	if !c.Found {
		return []string{}, "no output was captured for this process"
	}
	if len(c.Chunks) == 0 {
		if c.Dropped > 0 {
			return []string{}, "captured output was removed: " + safe(c.Ended)
		}
		return []string{}, "no output was captured before it"
	}
	end := -1
	if ev.Cursor != "" {
		for i, ch := range c.Chunks {
			if ch.Cursor == ev.Cursor {
				end = i
			}
		}
	}
	if end < 0 {
		for i, ch := range c.Chunks {
			if !ch.Time.After(ev.Time) {
				end = i
			}
		}
	}
	if end < 0 {
		return []string{}, "nothing was captured before it"
	}
	var tail []byte
	for i := end; i >= 0 && len(tail) < 64<<10; i-- {
		data := c.Chunks[i].Data
		if ch := c.Chunks[i]; ch.Lost != nil {
			data = fmt.Appendf(nil, "[%d bytes of captured output lost: %v]\n", ch.LostBytes, ch.Lost)
		}
		tail = append(append([]byte(nil), data...), tail...)
	}
	tail = bytes.TrimRight(tail, "\n")
	lines := bytes.Split(tail, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		s, capped := sanitize.Text(l, sanitize.Options{StripSGR: true, TabWidth: -1, MaxRunes: 400})
		if capped {
			s += "…"
		}
		out = append(out, s)
	}
	return out, ""
}

// JSON renders the report as indented JSON (C1 and bidi controls escaped).
func (rep *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(sanitize.JSON(b), '\n'), nil
}

// Markdown renders the report for people (and bug trackers).
func (rep *Report) Markdown() []byte {
	var b bytes.Buffer
	ts := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05.000Z")
	}
	title := "sandbox `" + rep.Sandbox + "`"
	if s := rep.Subject; s != nil {
		title += " · " + s.Kind + " `" + s.ID + "`"
	}
	fmt.Fprintf(&b, "# sandscope report: %s\n\n", title)
	fmt.Fprintf(&b, "- generated: %s by sandscope %s\n", ts(rep.GeneratedAt), rep.Sandscope)
	bridge := fmt.Sprintf("dialect %s, kind %s", rep.Bridge.Dialect, rep.Bridge.Kind)
	if rep.Bridge.Host != "" {
		bridge += ", host " + rep.Bridge.Host
	}
	fmt.Fprintf(&b, "- bridge: %s\n", bridge)
	sb := "UNKNOWN"
	if rep.Running != nil {
		sb = "STOPPED"
		if *rep.Running {
			sb = "RUNNING"
		}
	}
	fmt.Fprintf(&b, "- sandbox: %s, incarnation #%d\n", sb, rep.Incarnation)
	if s := rep.Subject; s != nil {
		fmt.Fprintf(&b, "- %s: **%s** (incarnation #%d)\n", s.Kind, s.State, s.Incarnation)
		fmt.Fprintf(&b, "- command: `%s`", code(ShellJoin(s.Command)))
		if s.Cwd != "" {
			fmt.Fprintf(&b, " · cwd `%s`", code(s.Cwd))
		}
		if len(s.EnvNames) > 0 {
			fmt.Fprintf(&b, " · env names: %s", strings.Join(s.EnvNames, ", "))
		}
		b.WriteString("\n")
		if len(s.Evidence) > 0 {
			fmt.Fprintf(&b, "- evidence: %s\n", strings.Join(s.Evidence, "; "))
		}
		if c := s.Capture; c != nil {
			fmt.Fprintf(&b, "- output captured: %d bytes kept, %d dropped by the budget; capture began %s", c.Bytes, c.Dropped, ts(c.Began))
			if c.EarlierGone {
				fmt.Fprintf(&b, " (output before it was already gone: %s)", c.GoneReason)
			}
			if c.Ended != "" {
				fmt.Fprintf(&b, "; stopped: %s", c.Ended)
			}
			b.WriteString("\n")
		} else if s.Kind == string(Process) {
			b.WriteString("- output captured: none\n")
		}
		if s.EarlierRun {
			b.WriteString("- last observed by an earlier run of sandscope\n")
		}
	}
	for _, n := range rep.Notices {
		fmt.Fprintf(&b, "- record notice: %s\n", n)
	}

	b.WriteString("\n## Incarnations\n\n| # | first seen | last seen | boundary | evidence |\n|---|---|---|---|---|\n")
	for i, inc := range rep.Incarnations {
		kind := "reported"
		switch {
		case i == 0:
			kind = "first seen"
		case inc.Inferred:
			kind = "inferred"
		}
		if inc.EarlierRun {
			kind += " (earlier run)"
		}
		fmt.Fprintf(&b, "| #%d | %s | %s | %s | %s |\n", inc.Number, ts(inc.FirstSeen), ts(inc.LastSeen), kind, cell(strings.Join(inc.Evidence, "; ")))
	}

	b.WriteString("\n## Timeline\n\n| time | what | evidence | cursor |\n|---|---|---|---|\n")
	for _, r := range rep.Timeline {
		what := r.What
		if r.Entity != "" {
			what = r.Entity + ": " + what
		}
		if r.EarlierRun {
			what += " ⟲"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", ts(r.Time), cell(what), cell(r.Evidence), cell(r.Cursor))
	}
	b.WriteString("\n⟲ = observed by an earlier run of sandscope.\n")

	b.WriteString("\n## Incidents\n")
	if len(rep.Incidents) == 0 {
		b.WriteString("\nNo interruption, gap, suspect end, ending or loss was recorded.\n")
	}
	for _, in := range rep.Incidents {
		head := strings.ToUpper(in.Kind)
		if in.Entity != "" {
			head += " · " + in.Entity
		}
		fmt.Fprintf(&b, "\n### %s · %s\n\n", ts(in.Time), head)
		fmt.Fprintf(&b, "%s", in.What)
		if in.Evidence != "" {
			fmt.Fprintf(&b, " — %s", in.Evidence)
		}
		if in.Cursor != "" {
			fmt.Fprintf(&b, " (cursor `%s`)", code(in.Cursor))
		}
		b.WriteString("\n\n")
		if len(in.LastLines) == 0 {
			if in.LinesNote != "" {
				fmt.Fprintf(&b, "Output before it: %s.\n", in.LinesNote)
			}
			continue
		}
		fmt.Fprintf(&b, "Last %s of output before it:\n\n", vocab.Count(len(in.LastLines), "line"))
		body := strings.Join(in.LastLines, "\n")
		fence := "```"
		for strings.Contains(body, fence) {
			fence += "`"
		}
		fmt.Fprintf(&b, "%stext\n%s\n%s\n", fence, body, fence)
	}

	b.WriteString("\n## Processes and terminals\n\n| kind | id | state | inc | command | first seen | last seen | captured |\n|---|---|---|---|---|---|---|---|\n")
	ents := append([]ReportEntity(nil), rep.Entities...)
	sort.SliceStable(ents, func(i, j int) bool { return ents[i].FirstSeen.Before(ents[j].FirstSeen) })
	for _, e := range ents {
		captured := "-"
		if e.Capture != nil {
			captured = fmt.Sprintf("%d B", e.Capture.Bytes)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | #%d | %s | %s | %s | %s |\n", e.Kind, cell(e.ID), cell(e.State), e.Incarnation,
			cell(ShellJoin(e.Command)), ts(e.FirstSeen), ts(e.LastSeen), captured)
	}
	return b.Bytes()
}

// ShellJoin joins argv the way a shell would read it back: words with spaces or shell characters
// are single-quoted.
func ShellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\|&;<>()$`*?[]{}~#!") {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	s = strings.ReplaceAll(s, "\\", "\\\\")
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "\n", " ")
}

// code makes text safe inside inline code.
func code(s string) string { return strings.ReplaceAll(s, "`", "'") }

// stableMarker is a container sandscope's marker file told apart, as a report incarnation.
type stableMarker struct {
	marker string
	inc    ReportInc
}

// stableMarkers are the containers a stable sandbox's marker events and runs name, in the order
// they were first seen, numbered from 1 (inferred: the bridge reports none).
func stableMarkers(events []Event) []stableMarker {
	var out []stableMarker
	seen := map[string]int{}
	note := func(marker string, t time.Time, earlier bool, why string) {
		if marker == "" {
			return
		}
		if i, ok := seen[marker]; ok {
			if t.UTC().After(out[i].inc.LastSeen) {
				out[i].inc.LastSeen = t.UTC()
			}
			return
		}
		seen[marker] = len(out)
		out = append(out, stableMarker{marker: marker, inc: ReportInc{Number: len(out) + 1, Inferred: true, FirstSeen: t.UTC(), LastSeen: t.UTC(),
			Evidence: []string{safe(why)}, EarlierRun: earlier}})
	}
	for _, ev := range events {
		if ev.Source != FromStable || ev.Stable == nil {
			continue
		}
		switch {
		case ev.Kind == KindStableMarker:
			note(ev.Stable.Marker, ev.Time, ev.Earlier, "container marker "+label(ev.Stable.Marker)+" printed by sandscope's recorder (inferred container identity)")
		case ev.Kind == KindStableRun && ev.Stable.Run != nil:
			note(ev.Stable.Run.Incarnation, ev.Time, ev.Earlier, "container marker "+label(ev.Stable.Run.Incarnation)+" printed by run "+label(ev.Stable.Run.ID)+" (inferred container identity)")
		}
	}
	return out
}
