package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"sandscope/localbridge"
	"sandscope/record"
	"sandscope/sanitize"
)

// runBook is what sandscope remembers of a stable bridge, where it cannot ask the bridge without
// starting containers: the runs and sessions it started or used, the container marker it last saw
// per sandbox, and whether it already said that an action starts the container. It lives in the
// bridge's record (record.StableSandbox, events of source "stable"), so `report`, the TUI and the
// commands read the same entries.
type runBook interface {
	Sandbox(bridge, sandbox string) (bookSandbox, error)
	Update(bridge, sandbox string, f func(*bookSandbox)) error
	Sandboxes(bridge string) ([]string, error)
}

type (
	bookSandbox = record.StableSandbox
	bookRun     = record.StableRun
)

// stableBookFile is where sandscope kept the book before the record did; it is imported once per
// bridge and kept.
func stableBookFile() string { return filepath.Join(localbridge.DefaultStateDir(), "stable-book.json") }

// recordBook is the run book in a bridge's record. Without a record (it could not be opened) it
// knows nothing and keeps nothing, and says why.
type recordBook struct {
	rec *record.Record
	err error
}

// stableBook opens the record of the bridge a command talks to (the identity `report` uses),
// imports the bridge's part of an old stable-book.json once, and tells stderr what the record
// says about itself. bridgeURL is the bridge's URL, the key of the old file. Close it when done.
func stableBook(g *globalOptions, bridgeURL string, stderr io.Writer) *recordBook {
	n, err := writerRecordName(context.Background(), g)
	if err != nil {
		return &recordBook{err: err}
	}
	rec, err := record.Open(record.Options{Dir: recordDir(), Bridge: n.identity, Legacy: n.legacy, Version: version})
	if err != nil {
		fmt.Fprintf(stderr, "sandscope: not recording: %s\n", sanitize.Message(err.Error()))
		return &recordBook{err: err}
	}
	if note, err := rec.ImportStableBook(stableBookFile(), bridgeURL); err != nil {
		fmt.Fprintf(stderr, "sandscope: %s\n", sanitize.Message(err.Error()))
	} else if note != "" {
		fmt.Fprintf(stderr, "sandscope: %s\n", sanitize.Message(note))
	}
	return &recordBook{rec: rec}
}

func (b *recordBook) noRecord() error {
	return fmt.Errorf("no record of this bridge: %w", b.err)
}

func (b *recordBook) Sandbox(_, sandbox string) (bookSandbox, error) {
	if b.rec == nil {
		return bookSandbox{}, b.noRecord()
	}
	return b.rec.Stable(sandbox)
}

func (b *recordBook) Update(_, sandbox string, f func(*bookSandbox)) error {
	if b.rec == nil {
		return b.noRecord()
	}
	return b.rec.UpdateStable(sandbox, f)
}

func (b *recordBook) Sandboxes(string) ([]string, error) {
	if b.rec == nil {
		return nil, b.noRecord()
	}
	return b.rec.StableSandboxes()
}

// Record is the record behind the book (nil when none could be opened).
func (b *recordBook) Record() *record.Record { return b.rec }

// Close commits what is queued and closes the record.
func (b *recordBook) Close() error {
	if b.rec == nil {
		return nil
	}
	return b.rec.Close()
}

// findRun finds a run by ID or unique prefix.
// recordedRun finds run id (or an ID prefix) of a stable sandbox in the record, for the commands
// that read a run sandscope started (logs, wait): exit 2 for a bad sandbox ID or an unknown run,
// 1 when the record cannot be read.
func recordedRun(book runBook, bridge, sandbox, id string) (bookRun, error) {
	if err := checkSandboxArg(sandbox); err != nil {
		return bookRun{}, err
	}
	sb, err := book.Sandbox(bridge, sandbox)
	if err != nil {
		return bookRun{}, &exitError{code: exitFailure, err: err}
	}
	run, err := findRun(sb, id)
	if err != nil {
		return bookRun{}, &exitError{code: exitUsage, err: fmt.Errorf("run %q: %w (stable bridges have no process list: only runs started here are known; see sandscope ls %s)", id, err, sandbox)}
	}
	return run, nil
}

func findRun(sb bookSandbox, id string) (bookRun, error) {
	r, err := sb.FindRun(id)
	if errors.Is(err, record.ErrNoRun) {
		return r, errNoMatch
	}
	return r, err
}

// withStableBook runs f with the bridge's run book and closes it after.
func withStableBook(g *globalOptions, bridgeURL string, stderr io.Writer, f func(book runBook) error) error {
	book := stableBook(g, bridgeURL, stderr)
	defer book.Close()
	return f(book)
}
