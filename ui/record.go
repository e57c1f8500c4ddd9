package ui

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/record"
	"sandscope/ui/common"
	"sandscope/vocab"
)

// openRecord opens the record of c's bridge under the state directory and starts its background
// watcher; it returns what the user should be told about the record (a damaged file, an unclean
// end of the previous run, or why nothing is recorded). Without a state directory nothing is
// recorded and the screens watch on their own.
func openRecord(c *common.Context, t Target, budget record.Budget, watch record.WatchBudget) []string {
	closeRecord(c)
	if c.StateDir == "" || c.Bridge == nil {
		return nil
	}
	if c.RecordID == "" {
		return []string{"not recording: sandscope has not reached this bridge yet (it records once the bridge has answered; restart or switch to it again then)"}
	}
	rec, err := record.Open(record.Options{Dir: filepath.Join(c.StateDir, "record"), Bridge: c.RecordID, Legacy: c.RecordLegacy, Version: c.Version, Budget: budget})
	if err != nil {
		return []string{"not recording: " + err.Error()}
	}
	c.Record = rec
	var notices []string
	if note, err := rec.ImportStableBook(filepath.Join(c.StateDir, "stable-book.json"), c.BridgeURL); err != nil {
		notices = append(notices, err.Error())
	} else if note != "" {
		notices = append(notices, note)
	}
	if t.BridgeProblem == nil {
		if watch.Fast <= 0 {
			watch.Fast = c.WatchFast
		}
		if watch.Slow <= 0 {
			watch.Slow = c.WatchSlow
		}
		c.Watch = record.NewManager(c.BaseCtx(), rec, common.RecordBridge(c.Bridge), watch)
	}
	return append(rec.Notices(), notices...)
}

// closeRecord stops the background watcher and closes the record.
func closeRecord(c *common.Context) {
	if c.Watch != nil {
		c.Watch.Close()
		c.Watch = nil
	}
	if c.Record != nil {
		_ = c.Record.Close()
		c.Record = nil
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
