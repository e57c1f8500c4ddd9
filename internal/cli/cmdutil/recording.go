package cmdutil

import (
	"fmt"
	"io"
	"path/filepath"
	"sandscope/localbridge"
	"sandscope/record"
	"sandscope/sanitize"
)

// RecordDir is where the records live.
func RecordDir() string { return filepath.Join(localbridge.DefaultStateDir(), "record") }

// startRecording starts a command's background record (see commandRecord). It only writes:
// nothing reads a sandbox's state from it, so Add does not fold (record.Options.NoFold).
func startRecording(g *Factory, stderr io.Writer) *CommandRecord {
	return StartCommandRecord(func() (*record.Record, error) { return openWriterRecord(g, true) }, stderr)
}

// TellRecordNotices prints on stderr what the record said happened to it (a lock waited for,
// damage found and repaired), so that a report built from a repaired record says so.
func TellRecordNotices(rec *record.Record, stderr io.Writer) {
	for _, n := range append(rec.Notices(), rec.TakeNotices()...) {
		fmt.Fprintf(stderr, "sandscope: record: %s\n", sanitize.Message(n))
	}
}
