package tui

import (
	"os"
	"sync"
)

// termOut is the TUI's terminal output: Bubble Tea's renderer writes each frame through it, and so
// do the bell, desktop notifications (OSC 9 / OSC 777) and clipboard requests (OSC 52). One lock
// makes every write whole: a sequence written between frames can never land inside one (where it
// would break the frame's own escape sequences). It is a term.File, so Bubble Tea still sees a
// terminal (size, raw mode).
type termOut struct {
	mu sync.Mutex
	f  *os.File
}

func newTermOut(f *os.File) *termOut { return &termOut{f: f} }

// Write writes p in full under the lock.
func (t *termOut) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.f.Write(p)
}

// Signal writes a notification's bytes (the ui.TerminalWriter).
func (t *termOut) Signal(p []byte) error {
	_, err := t.Write(p)
	return err
}

func (t *termOut) Read(p []byte) (int, error) { return t.f.Read(p) }
func (t *termOut) Close() error               { return nil } // the terminal outlives the program
func (t *termOut) Fd() uintptr                { return t.f.Fd() }
