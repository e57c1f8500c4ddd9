package notify

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"sandscope/client"
	"sandscope/followall"
	"sandscope/record"
	"sandscope/themes"
	"sandscope/ui/common"
)

// kept bounds the list (the oldest entries go first).
const kept = 500

// Item is one notification as the list shows it: every field sanitised at ingest.
type Item struct {
	Seq     int64
	Time    time.Time
	Kind    record.AlertKind
	Sandbox string
	Entity  record.EntityKind
	ID      string
	Command string
	Text    string

	rawSandbox, rawID string   // for opening the process (looked up in the record) and Title
	rawCommand        []string // for Body (cleaned there)
}

// Model is the notification list: newest first, a cursor, and a count of entries not yet seen.
type Model struct {
	ctx    *common.Context
	items  []Item // oldest first
	cursor int    // index in newest-first order
	unread int
	missed int64 // alerts the record dropped before they were read
	w, h   int
}

// New returns an empty list.
func New(ctx *common.Context) *Model { return &Model{ctx: ctx} }

// Add takes alerts from the record (oldest first), sanitising their text, and returns the items
// added.
func (m *Model) Add(as []record.Alert, missed int64) []Item {
	m.missed += missed
	out := make([]Item, 0, len(as))
	for _, a := range as {
		it := Item{Seq: a.Seq, Time: a.Time, Kind: a.Kind, Sandbox: common.SanitizeText(a.Sandbox), Entity: a.Entity,
			ID: common.SanitizeText(a.ID), Command: common.Argv(a.Command), Text: common.SanitizeText(a.Text),
			rawSandbox: a.Sandbox, rawID: a.ID, rawCommand: a.Command}
		m.items = append(m.items, it)
		out = append(out, it)
	}
	if n := len(m.items) - kept; n > 0 {
		m.items = append(m.items[:0:0], m.items[n:]...)
	}
	m.unread = min(m.unread+len(as), len(m.items))
	if m.cursor > 0 {
		m.cursor = min(m.cursor+len(as), len(m.items)-1)
	}
	return out
}

// Len is how many notifications the list holds.
func (m *Model) Len() int { return len(m.items) }

// Unread is how many arrived since the list was last opened.
func (m *Model) Unread() int { return m.unread }

// Opened marks every entry as seen and puts the cursor on the newest.
func (m *Model) Opened() {
	m.unread = 0
	m.cursor = 0
}

// Items returns the list, newest first.
func (m *Model) Items() []Item {
	out := make([]Item, len(m.items))
	for i, it := range m.items {
		out[len(m.items)-1-i] = it
	}
	return out
}

// SetSize sets the size of the box the list draws.
func (m *Model) SetSize(w, h int) { m.w, m.h = w, h }

// Head is an item's outcome, the word a notification leads with ("EXITED 2", "KILLED SIGTERM",
// "LOST", "SUSPECT END", "GAP"), and the badge its severity takes from the theme.
func Head(it Item) (themes.Badge, string) {
	switch it.Kind {
	case record.AlertLost:
		return themes.BadgeLost, "LOST"
	case record.AlertSuspect:
		return themes.BadgeSuspectEnd, "SUSPECT END"
	case record.AlertGap:
		return themes.BadgeReconnecting, "GAP"
	}
	word := it.Text
	switch {
	case word == "EXITED 0":
		return themes.BadgeExited, word
	case strings.HasPrefix(word, "EXITED "):
		return themes.BadgeExitedFail, word
	case strings.HasPrefix(word, "KILLED"):
		return themes.BadgeKilled, word
	case strings.HasPrefix(word, "TIMED OUT"):
		return themes.BadgeTimedOut, word
	case strings.HasPrefix(word, "ERROR"):
		return themes.BadgeError, word
	}
	return themes.BadgeEnded, word
}

// detail is what an item's text says beyond its head ("" for an ending, whose text is the head).
func detail(it Item) string {
	if it.Kind == record.AlertEnded {
		return ""
	}
	_, rest, _ := strings.Cut(it.Text, ": ") // "LOST: evidence", "GAP: 12 bytes missing"
	return strings.TrimSpace(rest)
}

// ShortName is the name an item's process goes by in `logs --all` and follow-all
// (followall.Name: "npm-test-1a2b3c4d"); a terminal is "terminal" and its ID's first characters.
func ShortName(it Item) string {
	if it.Entity == record.Terminal {
		return "terminal-" + common.SanitizeText(client.ShortID(it.ID))
	}
	return common.SanitizeText(followall.Name(client.Process{ID: it.rawID, Command: it.rawCommand}))
}

// Rest is everything after the head and the short name: the detail, sandbox/ID (what the command
// line takes) and the command (unless the short name already tells it).
func Rest(it Item) string {
	var parts []string
	if d := detail(it); d != "" {
		parts = append(parts, d)
	}
	parts = append(parts, it.Sandbox+"/"+it.ID)
	// a named shell script (sh -c SCRIPT NAME) is already told by its short name
	if argv := it.rawCommand; len(argv) > 0 && !(len(argv) >= 4 && argv[1] == "-c") {
		parts = append(parts, common.SanitizeText(followall.Summary(argv)))
	}
	return strings.Join(parts, " · ")
}

// StatusText is the status-area line for an item: the outcome first, then the short name, then
// the rest (a narrow screen cuts from the right, so the outcome is always seen).
func StatusText(it Item) string {
	_, head := Head(it)
	return head + " " + ShortName(it) + " · " + Rest(it)
}

// Level is how loudly the status area shows an item: an ending that was confirmed successful is
// information, the rest are warnings.
func Level(it Item) common.Level {
	if it.Kind == record.AlertEnded && (it.Text == "EXITED 0") {
		return common.Info
	}
	return common.Warn
}

// Title and Body are a desktop notification's two fields for an item (cleaned by Sequence).
func Title(it Item) string {
	_, head := Head(it)
	return fmt.Sprintf("%s %s", head, followall.Name(client.Process{ID: it.rawID, Command: it.rawCommand}))
}

// Body is the desktop notification's text: what happened, the sandbox and process, and the
// command.
func Body(it Item) string {
	parts := []string{it.Text, it.rawSandbox + "/" + it.rawID}
	if len(it.rawCommand) > 0 {
		parts = append(parts, strings.Join(common.DisplayArgv(it.rawCommand), " "))
	}
	return strings.Join(parts, " · ")
}

func (m *Model) selected() (Item, bool) {
	if len(m.items) == 0 {
		return Item{}, false
	}
	return m.items[len(m.items)-1-m.cursor], true
}

// Update moves the cursor and opens the selected process's log (Open): it returns the message
// the root should act on (common.OpenLogsMsg, or common.OpenSandboxMsg for a terminal).
func (m *Model) Update(msg tea.Msg) (*Model, tea.Cmd) {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return m, nil
	}
	keys := m.ctx.Keys
	last := len(m.items) - 1
	page := max(m.rows(), 1)
	switch {
	case key.Matches(k, keys.Up):
		m.cursor = max(m.cursor-1, 0)
	case key.Matches(k, keys.Down):
		m.cursor = max(min(m.cursor+1, last), 0)
	case key.Matches(k, keys.PageUp):
		m.cursor = max(m.cursor-page, 0)
	case key.Matches(k, keys.PageDown):
		m.cursor = max(min(m.cursor+page, last), 0)
	case key.Matches(k, keys.Top):
		m.cursor = 0
	case key.Matches(k, keys.Bottom):
		m.cursor = max(last, 0)
	case key.Matches(k, keys.Open):
		it, ok := m.selected()
		if !ok {
			return m, nil
		}
		return m, m.open(it)
	}
	return m, nil
}

// open is the message that shows an item's process: its log view, with what the record knows of
// it (LOST, STALE), or its sandbox for a terminal.
func (m *Model) open(it Item) tea.Cmd {
	if it.Entity == record.Terminal {
		return common.Send(common.OpenSandboxMsg{ID: it.rawSandbox, Terminal: it.rawID})
	}
	if m.ctx.Record == nil {
		return common.Send(common.OpenSandboxMsg{ID: it.rawSandbox})
	}
	st := m.ctx.Record.State(it.rawSandbox)
	e := st.Find(record.Process, it.rawID)
	if e == nil {
		return common.Send(common.OpenSandboxMsg{ID: it.rawSandbox})
	}
	return common.Send(common.OpenLogsMsg{Targets: []common.LogTarget{{Sandbox: it.rawSandbox, Process: e.Process,
		Incarnation: e.Incarnation, Stale: st.Stale(e.Incarnation), Lost: e.Lost}}})
}

// rows is how many entries fit in the box.
func (m *Model) rows() int {
	n := m.h - 4 // border (2), title, blank
	if m.missed > 0 {
		n -= 2 // blank, the note of dropped entries
	}
	return n
}

// View draws the list as a box of the size SetSize gave.
func (m *Model) View() string {
	st := m.ctx.Styles
	inner := max(m.w-4, 10)
	title := st.Title.Render(fmt.Sprintf("Notifications (%d)", len(m.items))) +
		st.Faint.Render(fmt.Sprintf(" · %s opens · %s or %s closes", m.ctx.Keys.Open.Help().Key, m.ctx.Keys.Notifications.Help().Key, m.ctx.Keys.Back.Help().Key))
	lines := []string{common.Fit(title, inner), ""}
	rows := max(m.rows(), 1)
	if len(m.items) == 0 {
		lines = append(lines, st.Faint.Render(common.Fit("Nothing yet: endings, losses, suspect ends and gaps of every watched process appear here.", inner)))
	}
	start := 0
	if m.cursor >= rows {
		start = m.cursor - rows + 1
	}
	newest := m.Items()
	end := min(len(newest), start+rows)
	// the outcome column is as wide as the widest outcome on screen, so names line up
	headW := 0
	for _, it := range newest[start:end] {
		_, head := Head(it)
		headW = max(headW, min(lipgloss.Width(head), 16))
	}
	for i := start; i < end; i++ {
		it := newest[i]
		b, head := Head(it)
		line := common.Clock(it.Time) + " " + st.Badge(b).Render(common.Fit(head, headW)) + " " +
			ShortName(it) + st.Faint.Render(" · ") + Rest(it)
		line = common.Fit(line, inner)
		if i == m.cursor {
			line = st.Selected.Render(common.Fit(common.StripANSI(line), inner))
		}
		lines = append(lines, line)
	}
	foot := ""
	if m.missed > 0 {
		foot = st.Warning.Render(fmt.Sprintf("%d older notifications were dropped before they were shown", m.missed))
	}
	if foot != "" {
		lines = append(lines, "", foot)
	}
	for i := range lines {
		lines[i] = common.Fit(lines[i], inner)
	}
	return st.Border.Width(inner + 2).Render(strings.Join(lines, "\n"))
}

// ShortHelp is the list's key help.
func (m *Model) ShortHelp() []key.Binding {
	k := m.ctx.Keys
	return []key.Binding{k.Up, k.Down, k.Open, k.Notifications, k.Back}
}

// FullHelp is every key of the list.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.ctx.Keys
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom}, {k.Open, k.Notifications, k.Back}}
}
