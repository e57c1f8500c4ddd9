package ui

import (
	"context"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/themes"
	"sandscope/ui/bridgepanel"
	"sandscope/ui/common"
	"sandscope/ui/notify"
	"sandscope/ui/sandboxes"
	"sandscope/ui/termpane"
)

// Model is the root model: a stack of screens (the sandboxes screen at the bottom), a header, a
// status area and the help overlay.
type Model struct {
	ctx    *common.Context
	cancel context.CancelFunc // ends the current bridge's streams (a context switch starts anew)
	opts   Options
	// baseCtx lives as long as the program: the demo scene and context switches derive from it.
	baseCtx    context.Context
	baseCancel context.CancelFunc
	stack      []common.Screen
	width      int
	height     int

	help       bool
	helpOffset int            // first line of the help overlay's keys shown (it scrolls when it does not fit)
	confirm    *common.Dialog // quit confirmation
	dialog     *common.Dialog // the root's own prompts: context switcher, first-run demo offer
	// hintsLine is the last key hints drawn, hintsKey the keys, width and styles it is for
	hintsKey, hintsLine string

	status      string
	statusLevel common.Level
	statusAt    time.Time
	shownStatus string    // the text the fade was armed for
	statusGen   int       // bumps with each new text: only the latest fade clears
	ageDue      time.Time // when the pending age tick fires (zero: none pending)
	ageGen      int       // the pending age tick's generation
	prompted    bool      // a dialog was open after the last message (opening one clears the status)

	connErr  error
	retryAt  time.Time
	attempts int
	ticking  bool
	quitting bool

	// panes maps each open terminal pane (by its ID, which its messages carry) to the terminal it
	// shows, for its attach, interrupt and terminate keys.
	panes     map[int64]paneEntry
	detachKey string

	// notes lists the record's alerts (endings, losses, suspect ends, gaps of every watched
	// process); alertCh wakes the root when the record changes, alertSeq is the last alert read.
	notes       *notify.Model
	notesOpen   bool
	alertCh     <-chan string
	alertCancel func()
	alertSeq    int64
	// noteStatus is the notification line the status area shows (when it does), led by noteHead
	// (the outcome, drawn in noteBadge's style); displaced is the message it pushed aside, shown
	// again when the notification fades.
	noteStatus     string
	noteHead       string
	noteBadge      themes.Badge
	displaced      string
	displacedLevel common.Level

	// driverNotes carries the driver's notices ("a different container answers now") to the
	// status area.
	driverNotes noticeQueue
	// declined holds, per sandbox, the wake notice the user said no to (asked again next time).
	declined map[string]string

	// panel is the bridge panel (capacity), opened over any screen.
	panel     *bridgepanel.Model
	panelOpen bool
}

// New builds the root model. Its context lives until the program quits (Close).
func New(o Options) (*Model, error) {
	base, baseCancel := context.WithCancel(context.Background())
	ctx, cancel := context.WithCancel(base)
	c, err := newContext(ctx, o)
	if err != nil {
		cancel()
		baseCancel()
		return nil, err
	}
	m := &Model{ctx: c, cancel: cancel, opts: o, baseCtx: base, baseCancel: baseCancel,
		panes: map[int64]paneEntry{}, detachKey: o.DetachKey, driverNotes: make(noticeQueue, 16), declined: map[string]string{}}
	if notices := openBridge(c, o.Target, o.RecordBudget, o.WatchBudget, o.OTLP, m.driverNotes); len(notices) > 0 {
		m.status, m.statusLevel = "record: "+strings.Join(notices, "; "), common.Warn
	}
	m.stack = []common.Screen{sandboxes.New(c)}
	m.notes = notify.New(c)
	m.panel = bridgepanel.New(c)
	m.subscribeAlerts()
	return m, nil
}

// Context exposes the shared context (tests).
func (m *Model) Context() *common.Context { return m.ctx }

// Init starts the sandboxes screen, and the demo scene when asked (offered first on a first run).
func (m *Model) Init() tea.Cmd {
	cmd := tea.Batch(m.stack[0].Init(), watchRecordWrites(m.ctx.BaseCtx(), m.ctx.Record, 0), waitAlerts(m.alertCh),
		waitDriverNotice(m.baseCtx, m.driverNotes))
	if d := m.opts.Demo; d != nil {
		if d.Offer {
			m.offerDemo()
		} else {
			cmd = tea.Batch(cmd, m.startDemo())
		}
	}
	return cmd
}

// Close stops every stream the screens hold and the demo scene. The program calls it after Run
// returns.
func (m *Model) Close() {
	m.closeScreens()
	m.cancel()
	m.unsubscribeAlerts()
	closeBridge(m.ctx)
	m.baseCancel()
}

// closeScreens closes every screen, kept or on the stack, and their streams.
func (m *Model) closeScreens() {
	for _, c := range m.stack {
		c.Close()
	}
	m.panes = map[int64]paneEntry{}
}

func (m *Model) top() common.Screen { return m.stack[len(m.stack)-1] }

// attached counts live streams in every screen.
func (m *Model) attached() int {
	n := 0
	for _, c := range m.stack {
		n += c.Attached()
	}
	return n
}

func (m *Model) capturing() bool { return m.top().Capturing() }

// paneEntry is an open terminal pane and the terminal it shows.
type paneEntry struct {
	pane *termpane.Model
	open common.OpenTerminalMsg
}

type rootTickMsg struct{}
