package ui

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/otlpexport"
	"sandscope/record"
	"sandscope/ui/common"
	"sandscope/vocab"
)

// openBridge opens what c needs of t's bridge: the record under the state directory, the driver
// (driver.Open on t's client, given the record: the stable driver keeps its run index there) and
// the record's background watcher through the driver. It returns what the user should be told
// about the record (a damaged file, an unclean end of the previous run, or why nothing is
// recorded). Without a state directory nothing is recorded and the screens watch on their own.
// notices receives the driver's one-line notices.
func openBridge(c *common.Context, t Target, budget record.Budget, watch record.WatchBudget, otlp otlpexport.Resolved, notices io.Writer) []string {
	c.Watch, c.Record, c.Export, c.NotRecorded = nil, nil, nil, ""
	var out []string
	switch {
	case c.StateDir == "":
		c.NotRecorded = "no state directory"
	case c.RecordID == "":
		c.NotRecorded = "this bridge has not answered yet"
		out = append(out, "not recording: sandscope has not reached this bridge yet (it records once the bridge has answered; restart or switch to it again then)")
	default:
		rec, err := record.Open(record.Options{Dir: filepath.Join(c.StateDir, "record"), Bridge: c.RecordID, Legacy: c.RecordLegacy, Version: c.Version, Budget: budget})
		if err != nil {
			c.NotRecorded = "the record could not be opened: " + err.Error()
			out = append(out, "not recording: "+err.Error())
			break
		}
		c.Record = rec
		out = append(out, rec.Notices()...)
		if note, err := rec.ImportStableBook(filepath.Join(c.StateDir, "stable-book.json"), c.BridgeURL); err != nil {
			out = append(out, err.Error())
		} else if note != "" {
			out = append(out, note)
		}
	}
	c.Driver = t.Driver
	if c.Driver == nil {
		c.Driver = openDriver(c.BaseCtx(), t.Client, c.Record, notices)
	}
	if c.Record != nil {
		if watch.Fast <= 0 {
			watch.Fast = c.WatchFast
		}
		if watch.Slow <= 0 {
			watch.Slow = c.WatchSlow
		}
		c.Watch = record.NewManager(c.BaseCtx(), c.Record, driver.ForRecord(c.Driver), watch)
		if otlp.Enabled {
			if err := startExport(c, otlp, notices); err != nil {
				out = append(out, "not exporting: "+err.Error())
			}
		}
	}
	return out
}

// startExport exports the record of the bridge on screen to the OpenTelemetry collector until
// the bridge is closed (closeBridge stops it), as `sandscope watch` does.
func startExport(c *common.Context, otlp otlpexport.Resolved, notices io.Writer) error {
	ctx, cancel := context.WithCancel(c.BaseCtx())
	traces, logs, err := otlp.Exporters(ctx)
	if err != nil {
		cancel()
		return err
	}
	res, err := otlp.Resource(ctx, c.Version)
	if err != nil {
		cancel()
		return err
	}
	dialect := string(c.Driver.Capabilities().Dialect)
	if dialect == "" {
		dialect = string(client.DialectPreview)
	}
	x, err := otlpexport.New(otlpexport.Options{Record: c.Record, Bridge: otlpexport.Bridge{URL: c.Driver.BaseURL(), Dialect: dialect},
		Name: otlp.PositionName(), Traces: traces, Logs: logs, Resource: res, Output: otlp.Output,
		Notices: func(line string) { fmt.Fprintln(notices, "export: "+line) }})
	if err != nil {
		cancel()
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = x.Run(ctx)
	}()
	c.Export = &common.Export{To: otlp.Describe(), Status: x.Status, Stop: func() { cancel(); <-done }}
	return nil
}

// openDriverTimeout bounds reading the bridge's API document. The command that made the client
// has read it already (the client keeps it), so this normally sends nothing.
const openDriverTimeout = 5 * time.Second

// openDriver opens the driver for the dialect cl's bridge speaks. A bridge that does not answer
// gets the preview driver, as the client always assumed: the screens then show it unreachable
// and retry.
func openDriver(base context.Context, cl *client.Client, rec *record.Record, notices io.Writer) driver.Driver {
	ctx, cancel := context.WithTimeout(base, openDriverTimeout)
	defer cancel()
	d, err := driver.Open(ctx, cl, driver.Options{Record: rec, Notices: notices})
	if err != nil {
		return driver.NewPreview(cl, client.Capabilities{})
	}
	return d
}

// closeBridge stops the background watcher, then the driver (it may still write to the record),
// then closes the record.
func closeBridge(c *common.Context) {
	if c.Watch != nil {
		c.Watch.Close()
		c.Watch = nil
	}
	if c.Export != nil {
		c.Export.Stop() // what the watcher recorded last is sent, for a bounded time
		c.Export = nil
	}
	if c.Driver != nil {
		_ = c.Driver.Close()
	}
	if c.Record != nil {
		_ = c.Record.Close()
		c.Record = nil
	}
}

// noticeQueue carries the driver's notices (written from any goroutine) to the status area:
// one line each, the oldest dropped when the UI falls behind.
type noticeQueue chan string

func (q noticeQueue) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimSpace(string(p)), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		select {
		case q <- line:
		default:
		}
	}
	return len(p), nil
}

// driverNoticeMsg is one notice of the driver.
type driverNoticeMsg struct{ text string }

// waitDriverNotice waits for the driver's next notice (until the program ends).
func waitDriverNotice(ctx context.Context, q noticeQueue) tea.Cmd {
	return func() tea.Msg {
		select {
		case s := <-q:
			return driverNoticeMsg{text: s}
		case <-ctx.Done():
			return nil
		}
	}
}

// recordFailedMsg says the record's background writer failed (a full disk, a file made read
// only): what it said and how many entries were not kept so far.
type recordFailedMsg struct {
	rec     *record.Record
	err     error
	unsaved int
}

// recordFailRepeat spaces out status updates while writes keep failing.
const recordFailRepeat = 5 * time.Second

// watchRecordWrites waits (after delay) for rec's next write failure or notice (a long wait for
// another process's lock, damage found and repaired). It ends with the record or the program.
func watchRecordWrites(ctx context.Context, rec *record.Record, delay time.Duration) tea.Cmd {
	if rec == nil {
		return nil
	}
	return func() tea.Msg {
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-rec.Closed():
				return nil
			case <-ctx.Done():
				return nil
			}
		}
		select {
		case <-rec.WriteFailed():
			return recordFailedMsg{rec: rec, err: rec.Err(), unsaved: rec.Unsaved()}
		case <-rec.NoticeC():
			return recordNoticeMsg{rec: rec, notices: rec.TakeNotices()}
		case <-rec.Closed():
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// recordFailed shows a failed record write on the status line (the screens and their followers
// go on: only the record misses what it could not write) and waits for the next one.
func (m *Model) recordFailed(msg recordFailedMsg) tea.Cmd {
	if msg.rec != m.ctx.Record {
		return nil // a record since closed by a context switch
	}
	why := "write failed"
	if msg.err != nil {
		why = strings.TrimPrefix(msg.err.Error(), "record: ")
	}
	m.status = fmt.Sprintf("record: cannot write, %s not kept; following goes on, but what happens now is missing from the record (%s; %s)",
		vocab.Count(msg.unsaved, "entry|entries"), why, msg.rec.Path())
	m.status = common.SanitizeText(m.status)
	m.statusLevel, m.statusAt = common.Warn, m.ctx.Clock()
	return watchRecordWrites(m.ctx.BaseCtx(), msg.rec, recordFailRepeat)
}

// recordNoticeMsg carries what the record says happened to it since Open (a long wait for another
// process's lock, damage found, a repair and what it recovered, damage not repairable yet).
type recordNoticeMsg struct {
	rec     *record.Record
	notices []string
}

// recordNotice shows the record's latest notice on the status line and waits for the next event.
func (m *Model) recordNotice(msg recordNoticeMsg) tea.Cmd {
	if msg.rec != m.ctx.Record {
		return nil // a record since closed by a context switch
	}
	if n := len(msg.notices); n > 0 {
		m.status = common.SanitizeText("record: " + msg.notices[n-1])
		m.statusLevel, m.statusAt = common.Warn, m.ctx.Clock()
	}
	return watchRecordWrites(m.ctx.BaseCtx(), msg.rec, 0)
}
