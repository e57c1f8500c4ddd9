// Package watch is `sandscope watch`: the record's watcher without a screen. It watches every
// sandbox known on one or more bridges, captures output within the watch budget, keeps the record,
// tells each notable change on one line (the words of the TUI's notifications, or JSON), and
// optionally exports the record over OpenTelemetry, until its context ends.
//
// It resolves nothing itself: the command hands it each bridge's driver and record. It sends only
// what the record's watcher sends (driver.ForRecord): on a bridge whose lookups start containers,
// nothing.
package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/followall"
	"sandscope/otlpexport"
	"sandscope/record"
	"sandscope/vocab"
)

// Target is one bridge to watch.
type Target struct {
	// Name tells the bridges apart on each line when several are watched (a context's name);
	// "" for one.
	Name   string
	Driver driver.Driver
	Record *record.Record
	// Export sends the record over OTLP (nil: no export).
	Export *otlpexport.Exporter
}

// Options shape the watch.
type Options struct {
	JSON   bool
	Budget record.WatchBudget
	// Relist is how often a bridge that lists its sandboxes is asked again for new ones (default
	// 30 s). A bridge without a list is watched for the sandboxes its record knows.
	Relist time.Duration
	// StatusEvery is how often the export's position is told while something waits (default 1 min).
	StatusEvery time.Duration
	// Stop bounds the shutdown once the context ends (default 5 s): watchers and captures stop,
	// the record is flushed, the export sends what it can.
	Stop time.Duration
	Now  func() time.Time
}

// Run watches the targets until ctx ends, then stops within Options.Stop and returns nil. Errors
// of one bridge (its list, its export) are told as lines; they do not end the watch.
func Run(ctx context.Context, targets []Target, o Options, stderr io.Writer) error {
	if o.Relist <= 0 {
		o.Relist = 30 * time.Second
	}
	if o.StatusEvery <= 0 {
		o.StatusEvery = time.Minute
	}
	if o.Stop <= 0 {
		o.Stop = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	out := &logger{w: stderr, json: o.JSON, now: o.Now}
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			watchOne(ctx, t, o, out)
		}()
	}
	wg.Wait()
	return nil
}

// watchOne watches one bridge until ctx ends.
func watchOne(ctx context.Context, t Target, o Options, out *logger) {
	rec, d := t.Record, t.Driver
	mgr := record.NewManager(context.WithoutCancel(ctx), rec, driver.ForRecord(d), o.Budget)
	sub, unsub := rec.Subscribe()
	defer unsub()
	seq := rec.LastAlert()

	exportCtx, stopExport := context.WithCancel(context.WithoutCancel(ctx))
	exportDone := make(chan struct{})
	if t.Export != nil {
		t.Export.SetNotices(func(s string) { out.notice(t.Name, "export", s) })
		go func() {
			defer close(exportDone)
			if err := t.Export.Run(exportCtx); err != nil {
				out.notice(t.Name, "export", err.Error())
			}
		}()
	} else {
		close(exportDone)
	}

	n := track(ctx, t, mgr, out)
	out.notice(t.Name, "start", fmt.Sprintf("watching %s on %s (%s)", vocab.Count(n, "sandbox|sandboxes"),
		vocab.Text(record.NormalizeURL(d.BaseURL())), dialectOf(d)))

	relist := time.NewTicker(o.Relist)
	defer relist.Stop()
	status := time.NewTicker(o.StatusEvery)
	defer status.Stop()
	for {
		select {
		case <-ctx.Done():
			stop(t, mgr, stopExport, exportDone, o, out)
			return
		case _, ok := <-sub:
			if !ok {
				sub = nil
			}
			as, last, missed := rec.Alerts(seq)
			seq = last
			if missed > 0 {
				out.notice(t.Name, "missed", fmt.Sprintf("%d changes came faster than they could be told; the record has them (sandscope report)", missed))
			}
			for _, a := range as {
				out.alert(t.Name, a)
			}
		case <-rec.NoticeC():
			for _, n := range rec.TakeNotices() {
				out.notice(t.Name, "record", "record: "+n)
			}
		case <-relist.C:
			track(ctx, t, mgr, out)
		case <-status.C:
			if t.Export != nil {
				if st := t.Export.Status(); st.Backlog > 0 || st.Failing {
					out.export(t.Name, st)
				}
			}
		}
	}
}

// stop ends the watch of one bridge: watchers and captures first (their last events go into the
// record), then the record is flushed and the export sends what it can, all within o.Stop.
func stop(t Target, mgr *record.Manager, stopExport context.CancelFunc, exportDone <-chan struct{}, o Options, out *logger) {
	deadline := time.Now().Add(o.Stop)
	closed := make(chan struct{})
	go func() { mgr.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(o.Stop / 3):
		out.notice(t.Name, "stop", "the watchers did not stop in time; stopping anyway")
	}
	_ = t.Record.Flush()
	stopExport()
	select {
	case <-exportDone:
	case <-time.After(time.Until(deadline)):
		out.notice(t.Name, "stop", "the export did not finish in time; what it did not send stays in the record and goes at the next start")
	}
	if t.Export != nil {
		out.export(t.Name, t.Export.Status())
	}
	out.notice(t.Name, "stop", "stopped")
}

// track watches every sandbox the record knows and, where the bridge lists its sandboxes, every
// one it lists (a bridge-wide list starts no container). It returns how many are watched.
func track(ctx context.Context, t Target, mgr *record.Manager, out *logger) int {
	known, err := t.Record.KnownSandboxes()
	if err != nil {
		out.notice(t.Name, "record", "record: "+err.Error())
	}
	if t.Driver.Features().SandboxList {
		lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		list, err := t.Driver.ListSandboxes(lctx)
		cancel()
		switch {
		case err == nil:
			for _, s := range list {
				known = append(known, s.ID)
			}
		case ctx.Err() == nil:
			out.notice(t.Name, "list", "listing sandboxes: "+vocab.Text(err.Error()))
		}
	}
	before := len(mgr.Watched())
	mgr.Track(known...)
	if after := len(mgr.Watched()); before > 0 && after > before {
		out.notice(t.Name, "track", fmt.Sprintf("now watching %s", vocab.Count(after, "sandbox|sandboxes")))
	}
	return len(mgr.Watched())
}

func dialectOf(d driver.Driver) string {
	if s := string(d.Capabilities().Dialect); s != "" {
		return s
	}
	return string(client.DialectPreview)
}

// logger writes one line per change, as text or JSON, one writer at a time.
type logger struct {
	mu   sync.Mutex
	w    io.Writer
	json bool
	now  func() time.Time
}

// Line is a JSON line of `watch --json`.
type Line struct {
	Time    time.Time `json:"time"`
	Bridge  string    `json:"bridge,omitempty"`
	Kind    string    `json:"kind"` // ended, lost, suspect, gap; or start, stop, export, record, list, …
	Head    string    `json:"head,omitempty"`
	Sandbox string    `json:"sandbox,omitempty"`
	Entity  string    `json:"entity,omitempty"`
	ID      string    `json:"id,omitempty"`
	Command []string  `json:"command,omitempty"`
	Text    string    `json:"text"`
	Cursor  string    `json:"cursor,omitempty"`
	// Export's position, for kind "export".
	Position *int64 `json:"position,omitempty"`
	Backlog  *int64 `json:"backlog,omitempty"`
	Failing  *bool  `json:"failing,omitempty"`
}

func (l *logger) write(bridge string, line Line, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.json {
		line.Time, line.Bridge = l.now().UTC(), bridge
		b, err := json.Marshal(line)
		if err != nil {
			return
		}
		_, _ = l.w.Write(append(b, '\n'))
		return
	}
	prefix := l.now().Format(time.RFC3339) + " "
	if bridge != "" {
		prefix += "[" + vocab.Text(bridge) + "] "
	}
	_, _ = io.WriteString(l.w, prefix+text+"\n")
}

func (l *logger) notice(bridge, kind, text string) {
	text = vocab.Text(text)
	l.write(bridge, Line{Kind: kind, Text: text}, "sandscope: "+text)
}

func (l *logger) export(bridge string, st otlpexport.Status) {
	text := fmt.Sprintf("export: position %d, %s waiting", st.Position, vocab.Count(int(st.Backlog), "event"))
	if st.OutputBacklog > 0 {
		text += fmt.Sprintf(" (and %d bytes of output)", st.OutputBacklog)
	}
	if st.Failing {
		text += fmt.Sprintf("; the collector has not answered since %s: %s", st.FailingSince.Format(time.RFC3339), vocab.Text(st.LastError))
	}
	pos, back, failing := st.Position, st.Backlog, st.Failing
	l.write(bridge, Line{Kind: "export", Text: text, Position: &pos, Backlog: &back, Failing: &failing}, "sandscope: "+text)
}

// alert tells one change in the words of the TUI's notifications: the outcome first ("EXITED 3",
// "LOST", "SUSPECT END", "GAP"), the short name, what happened beyond the outcome, SANDBOX/ID and
// the command.
func (l *logger) alert(bridge string, a record.Alert) {
	head := Head(a)
	name := followall.Name(client.Process{ID: a.ID, Command: a.Command})
	if a.Entity == record.Terminal {
		id := a.ID
		if len(id) > 8 {
			id = id[:8]
		}
		name = "terminal-" + vocab.Text(id)
	}
	var parts []string
	if a.Kind != record.AlertEnded {
		if _, rest, ok := strings.Cut(a.Text, ": "); ok && strings.TrimSpace(rest) != "" {
			parts = append(parts, vocab.Text(strings.TrimSpace(rest)))
		}
	}
	parts = append(parts, vocab.Text(a.Sandbox)+"/"+vocab.Text(a.ID))
	if len(a.Command) > 0 && !(len(a.Command) >= 4 && a.Command[1] == "-c") {
		parts = append(parts, followall.Summary(a.Command))
	}
	cmd := make([]string, len(a.Command))
	for i, s := range a.Command {
		cmd[i] = vocab.Text(s)
	}
	line := Line{Kind: string(a.Kind), Head: head, Sandbox: vocab.Text(a.Sandbox), Entity: string(a.Entity), ID: vocab.Text(a.ID),
		Command: cmd, Text: vocab.Text(a.Text), Cursor: vocab.Text(a.Cursor)}
	l.write(bridge, line, head+" "+name+" · "+strings.Join(parts, " · "))
}

// Head is the word an alert leads with, as the TUI's notifications word it.
func Head(a record.Alert) string {
	switch a.Kind {
	case record.AlertLost:
		return "LOST"
	case record.AlertSuspect:
		return "SUSPECT END"
	case record.AlertGap:
		return "GAP"
	}
	return vocab.Text(a.Text)
}
