package ui

import (
	"path/filepath"

	"sandscope/record"
	"sandscope/ui/common"
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
	rec, err := record.Open(record.Options{Dir: filepath.Join(c.StateDir, "record"), Bridge: c.BridgeURL, Version: c.Version, Budget: budget})
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
