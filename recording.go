package main

import (
	"fmt"
	"io"
	"path/filepath"
	"sandscope/localbridge"
	"sandscope/record"
	"sandscope/sanitize"
)

// recordDir is where the records live.
func recordDir() string { return filepath.Join(localbridge.DefaultStateDir(), "record") }

// startRecording starts a command's background record (see commandRecord).
func startRecording(g *globalOptions, stderr io.Writer) *commandRecord {
	return startCommandRecord(func() (*record.Record, error) { return openCommandRecord(g) }, stderr)
}

// tellRecordNotices prints on stderr what the record said happened to it (a lock waited for,
// damage found and repaired), so that a report built from a repaired record says so.
func tellRecordNotices(rec *record.Record, stderr io.Writer) {
	for _, n := range append(rec.Notices(), rec.TakeNotices()...) {
		fmt.Fprintf(stderr, "sandscope: record: %s\n", sanitize.Message(n))
	}
}
