package termpane

import (
	"sync/atomic"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/muesli/termenv"

	"sandscope/client"
	"sandscope/keymap"
	"sandscope/themes"
	"sandscope/ui/common"
)

// State is the connection state the header shows.
type State int

const (
	Connecting   State = iota
	Live               // connected, output flowing
	Reconnecting       // dropped; resuming from the cursor
	Exited             // the terminal exited (Exit)
	Errored            // the bridge reported the terminal failed, or the stream ended unexplained
	Lost               // the terminal vanished with its container (Loss)
	Failed             // reconnecting gave up
)

func (s State) String() string {
	return [...]string{"CONNECTING", "LIVE", "RECONNECTING", "EXITED", "ERROR", "LOST", "FAILED"}[s]
}

// Final reports a state the pane does not leave.
func (s State) Final() bool { return s >= Exited }

// Options configure a pane.
type Options struct {
	TerminalID string
	Command    []string
	// Context is the program's shared context: the styles the pane draws with, the user's keys
	// (the leave key, never sent to the PTY, and the keys that act on the pane while it is not
	// focused) and the lifetime the worker is bound to (Close ends it in any case). Nil: default
	// keys, colourless styles and a background lifetime.
	Context *common.Context
	// Plain renders the emulator's cells without SGR styling (also when the styles are ASCII).
	Plain bool
	// FrameInterval is how often the UI takes a snapshot (default 1/30 s).
	FrameInterval time.Duration
	// Exact turns off the catch-up fast path (fastpath.go): every byte is drawn.
	Exact bool
	// Replays says the connection has no cursors and replays its whole buffer on a reconnect (a
	// stable PTY): the header says so instead of "from cursor".
	Replays bool
	// NoSignals says the terminal cannot be interrupted or terminated through the bridge (a shell
	// of a driver without driver.Terminals): those keys are not offered.
	NoSignals bool
}

// defaultContext is the context of a pane given none: default keys and colourless styles.
func defaultContext() *common.Context {
	p, err := themes.Builtin("dark")
	if err != nil {
		p = themes.Palette{}
	}
	return &common.Context{Styles: themes.New(p, themes.AsciiRenderer()), Keys: keymap.New()}
}

var nextID atomic.Int64

// Model is the embedded terminal pane.
type Model struct {
	id    int64
	opts  Options
	conn  Conn
	ctx   *common.Context
	w     *worker
	leave key.Binding

	width, height int // the whole pane, header included
	ox, oy        int // screen position of the pane's top-left cell, for mouse events
	focused       bool
	closed        bool
	statusDone    bool

	state   State
	attempt int
	reason  string // latest interruption / error text
	exit    *client.Exit
	// replayed is the size of the last buffer a stable PTY replayed (the screen was cleared and
	// repainted from it); endedUnknown: a stable PTY's shell ended, its exit code unknown.
	replayed     int
	endedUnknown bool
	loss         *client.LossEvidence
	gaps         int
	snap         Snapshot

	// scrolled: the view shows the scrollback, from row scrollTop of the pane's document (the
	// scrollback's rows, then the screen's); otherwise it shows the screen, live.
	scrolled  bool
	scrollTop int64
}

// headerLines is how many rows the header takes.
const headerLines = 1

// New starts the pane's worker on conn at the given size (the whole pane, header included).
func New(conn Conn, width, height int, opts Options) *Model {
	if opts.Context == nil {
		opts.Context = defaultContext()
	}
	if opts.Context.Styles.Renderer != nil && opts.Context.Styles.Renderer.ColorProfile() == termenv.Ascii {
		opts.Plain = true
	}
	ctx := opts.Context
	m := &Model{
		id: nextID.Add(1), opts: opts, conn: conn,
		ctx:    ctx,
		leave:  ctx.Keys.LeavePane,
		width:  max(width, 1),
		height: max(height, headerLines+1),
	}
	cols, rows := m.innerSize()
	m.w = newWorker(ctx.BaseCtx(), conn, cols, rows, opts.Plain, !opts.Exact, opts.FrameInterval)
	m.snap = m.w.Snapshot()
	return m
}

func (m *Model) innerSize() (cols, rows int) {
	return max(m.width, 1), max(m.height-headerLines, 1)
}

// InnerSize is the size of the emulator (and of the remote PTY the pane asked for).
func (m *Model) InnerSize() (cols, rows int) { return m.innerSize() }

// ID distinguishes this pane's messages from another pane's.
func (m *Model) ID() int64 { return m.id }

// State is the connection state.
func (m *Model) State() State { return m.state }

// Snapshot is the last snapshot the pane drew.
func (m *Model) Snapshot() Snapshot { return m.snap }

// Focused reports whether keys go to the remote terminal.
func (m *Model) Focused() bool { return m.focused }

// Focus sends keys to the remote terminal until the leave key, and returns the view to live.
func (m *Model) Focus() { m.focused, m.scrolled = true, false }

// Scrolled reports that the view shows the scrollback rather than the live screen.
func (m *Model) Scrolled() bool { return m.scrolled }

// Blur stops sending keys.
func (m *Model) Blur() { m.focused = false }

// Capturing reports that the pane takes every key (while focused).
func (m *Model) Capturing() bool { return m.focused }

// Prompting is false: the pane opens no dialog of its own.
func (m *Model) Prompting() bool { return false }

// Attached counts the live streams the pane holds (for the root's quit confirmation).
func (m *Model) Attached() int {
	if m.closed || m.state.Final() {
		return 0
	}
	return 1
}

// SetOrigin tells the pane where its top-left cell is on screen, so mouse events can be mapped.
func (m *Model) SetOrigin(x, y int) { m.ox, m.oy = x, y }

// SetSize resizes the pane; the emulator and the remote PTY follow.
func (m *Model) SetSize(width, height int) {
	width, height = max(width, 1), max(height, headerLines+1)
	if width == m.width && height == m.height {
		return
	}
	m.width, m.height = width, height
	if !m.closed {
		m.w.setSize(m.innerSize())
	}
}

// Close stops the worker and closes the connection.
func (m *Model) Close() {
	if m.closed {
		return
	}
	m.closed = true
	m.w.close()
	_ = m.conn.Close()
}

// LeaveBinding is the key that gives focus back to the TUI.
func (m *Model) LeaveBinding() key.Binding { return m.leave }

// ShortHelp lists the pane's keys for the help bar: the leave key while focused, else the keys
// that act on the pane.
func (m *Model) ShortHelp() []key.Binding {
	k := m.ctx.Keys
	if m.focused {
		return []key.Binding{m.leave}
	}
	if m.scrolled {
		return []key.Binding{k.PageUp, k.PageDown, k.Top, k.Bottom, k.FocusPane, k.Help}
	}
	out := []key.Binding{k.FocusPane}
	if m.hasScrollback() {
		out = append(out, k.PageUp)
	}
	out = append(out, k.Attach)
	if !m.opts.NoSignals {
		out = append(out, k.Interrupt, k.Terminate)
	}
	return append(out, k.Back, k.Help)
}

// FullHelp lists the pane's keys for the help screen: the leave key while focused, else the
// keys of the table that dispatches them.
func (m *Model) FullHelp() [][]key.Binding {
	if m.focused {
		return [][]key.Binding{{m.leave}}
	}
	return m.ctx.Keys.HelpColumns(m.actions().Bindings())
}

// Messages. Each carries the pane ID so a root with several panes can route them.
type (
	// statusMsg is a batch of connection events (everything but output).
	statusMsg struct {
		id     int64
		events []client.TermEvent
		closed bool
	}
	// frameMsg asks the pane to take the worker's latest snapshot.
	frameMsg struct{ id int64 }
	// FocusLeftMsg says the user pressed the leave key: the root takes focus back.
	FocusLeftMsg struct{ ID int64 }
	// ActionMsg asks the root to act on the pane's terminal (the pane holds no bridge client).
	ActionMsg struct {
		ID     int64
		Action Action
	}
)

// Action is what an unfocused pane's keys ask of the root.
type Action int

const (
	AttachAction    Action = iota // hand the whole screen to the terminal
	InterruptAction               // SIGINT to the terminal's process tree
	TerminateAction               // end the terminal (the root asks first and says how)
)

// Init starts draining connection events and the frame ticker.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(waitForStatus(m.id, m.w.status), m.tick())
}

func waitForStatus(id int64, ch <-chan client.TermEvent) tea.Cmd {
	return func() tea.Msg {
		batch, closed := common.Drain(ch, 256)
		return statusMsg{id: id, events: batch, closed: closed}
	}
}

func (m *Model) tick() tea.Cmd {
	id := m.id
	return tea.Tick(m.w.frame, func(time.Time) tea.Msg { return frameMsg{id: id} })
}
