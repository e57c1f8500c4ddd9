package ui

import (
	"context"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/ui/common"
	"sandscope/ui/logview"
	"sandscope/ui/sandbox"
	"sandscope/ui/sandboxes"
)

// Model is the root model: a stack of screens (the sandboxes screen at the bottom), a header, a
// status area and the help overlay.
type Model struct {
	ctx    *common.Context
	cancel context.CancelFunc
	stack  []common.Component
	width  int
	height int

	help    bool
	confirm *common.Dialog // quit confirmation

	status      string
	statusLevel common.Level
	statusAt    time.Time

	connErr  error
	retryAt  time.Time
	attempts int
	ticking  bool
	quitting bool

	terminalPane TerminalPaneFunc

	// sandboxes keeps each opened sandbox screen (and its watcher, slowed down) after the user
	// leaves it, so its history — stale entries, losses, the incarnation timeline — survives.
	sandboxes map[string]*sandbox.Model
	// logs keeps each opened log view (buffer and followers) likewise: reopening shows the same
	// history, also for processes that are gone since.
	logs map[string]*logview.Model
}

// New builds the root model. Its context lives until the program quits (Close).
func New(o Options) (*Model, error) {
	ctx, cancel := context.WithCancel(context.Background())
	c, err := newContext(ctx, o)
	if err != nil {
		cancel()
		return nil, err
	}
	m := &Model{ctx: c, cancel: cancel, sandboxes: map[string]*sandbox.Model{}, logs: map[string]*logview.Model{}}
	m.stack = []common.Component{sandboxes.New(c)}
	return m, nil
}

// Context exposes the shared context (tests).
func (m *Model) Context() *common.Context { return m.ctx }

// Init starts the sandboxes screen.
func (m *Model) Init() tea.Cmd { return m.stack[0].Init() }

// Close stops every stream the screens hold. The program calls it after Run returns.
func (m *Model) Close() {
	for _, c := range m.stack {
		if cl, ok := c.(interface{ Close() }); ok {
			cl.Close()
		}
	}
	for _, sb := range m.sandboxes {
		sb.Close()
	}
	for _, lv := range m.logs {
		lv.Close()
	}
	m.cancel()
}

func (m *Model) top() common.Component { return m.stack[len(m.stack)-1] }

// attached counts live streams in every screen.
func (m *Model) attached() int {
	n := 0
	for _, c := range m.stack {
		if a, ok := c.(common.Attacher); ok {
			n += a.Attached()
		}
	}
	return n
}

func (m *Model) capturing() bool {
	c, ok := m.top().(common.Capturer)
	return ok && c.Capturing()
}

type rootTickMsg struct{}

// TerminalPaneFunc opens a terminal pane component for a terminal row.
type TerminalPaneFunc func(ctx *common.Context, msg common.OpenTerminalMsg) (common.Component, error)
