package sandboxes

import (
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
)

var update = flag.Bool("update", false, "rewrite golden files")

const wait = 50 * time.Millisecond

// feed runs cmd and feeds every message it yields back into the model (one level deep), returning
// the messages that are not the model's own.
func feed(t *testing.T, m *Model, cmd tea.Cmd) []tea.Msg {
	t.Helper()
	var up []tea.Msg
	for _, msg := range uitest.Exec(cmd, wait) {
		switch msg.(type) {
		case refreshMsg, actionMsg:
			_, c := m.Update(msg)
			up = append(up, feed(t, m, c)...)
		default:
			up = append(up, msg)
		}
	}
	return up
}

func press(t *testing.T, m *Model, keys ...string) []tea.Msg {
	t.Helper()
	var up []tea.Msg
	for _, k := range keys {
		_, cmd := m.Update(uitest.Key(k))
		up = append(up, feed(t, m, cmd)...)
	}
	return up
}

func statuses(msgs []tea.Msg) string {
	var s []string
	for _, m := range msgs {
		if st, ok := m.(common.StatusMsg); ok {
			s = append(s, st.Text)
		}
	}
	return strings.Join(s, "\n")
}

func newModel(t *testing.T, br *uitest.Bridge, local bool) *Model {
	ctx := uitest.Context(t, br, 100, 27)
	ctx.Local = local
	br.Caps.Local = local
	m := New(ctx)
	m.SetSize(100, 27)
	return m
}

func TestGoldenEmpty(t *testing.T) {
	br := uitest.NewBridge()
	m := newModel(t, br, true)
	feed(t, m, m.Init())
	uitest.Golden(t, "sandboxes_empty", m.View(), *update)
}

func TestGoldenListed(t *testing.T) {
	br := uitest.NewBridge()
	br.Sandboxes = []client.SandboxInfo{
		{ID: "abcdefghijklmnopqrstuvwx", Running: true, Incarnation: 3, Processes: 4, Terminals: 1, CreatedAt: uitest.T0.Add(-time.Hour)},
		{ID: "stoppedsandboxaaaaaaaaaa", Running: false, Incarnation: 1, Processes: 0, Terminals: 0, CreatedAt: uitest.T0.Add(-30 * time.Minute)},
	}
	m := newModel(t, br, true)
	feed(t, m, m.Init())
	press(t, m, "j")
	uitest.Golden(t, "sandboxes_listed", m.View(), *update)
}

func TestCreatePersistsAndReloads(t *testing.T) {
	br := uitest.NewBridge()
	br.NextID = "createdsandboxaaaaaaaaaa"
	m := newModel(t, br, false)
	feed(t, m, m.Init())
	up := press(t, m, "c")
	if m.dialog == nil || br.Called("create") {
		t.Fatal("c did not ask for a name first")
	}
	up = append(up, press(t, m, "enter")...) // empty: the bridge mints a random ID
	if !br.Called("create") {
		t.Fatal("create was not called")
	}
	if !strings.Contains(statuses(up), "created sandbox createdsandboxaaaaaaaaaa") {
		t.Fatalf("status: %q", statuses(up))
	}
	if m.Selected() != "createdsandboxaaaaaaaaaa" {
		t.Fatalf("selected %q", m.Selected())
	}
	again := New(m.ctx)
	if len(again.rows) != 1 || again.rows[0].ID != "createdsandboxaaaaaaaaaa" || again.rows[0].Source != "created" {
		t.Fatalf("reloaded rows: %+v", again.rows)
	}
	// the remote sandbox is polled with the non-waking lookup
	if !br.Called("running createdsandboxaaaaaaaaaa") {
		t.Fatal("refresh did not look the sandbox up")
	}
}

// TestCreateOffersAName: c asks for a name, checks it as add-by-ID does (the form stays open
// with the error), and creates the named sandbox without asking the bridge to mint one.
func TestCreateOffersAName(t *testing.T) {
	br := uitest.NewBridge()
	m := newModel(t, br, false)
	feed(t, m, m.Init())
	press(t, m, "c")
	if v := m.View(); !strings.Contains(v, "Create a sandbox") || !strings.Contains(v, "leave it empty for a") {
		t.Fatalf("no create prompt:\n%s", v)
	}
	typeText := func(s string) {
		for _, r := range s {
			press(t, m, string(r))
		}
	}
	typeText("Bad-ID")
	press(t, m, "enter")
	if v := m.View(); m.dialog == nil || !strings.Contains(v, `sandbox ID "Bad-ID": must be `+common.SandboxIDRule) {
		t.Fatalf("a bad name was not refused in the form:\n%s", v)
	}
	for range "Bad-ID" {
		press(t, m, "backspace")
	}
	typeText("mybox")
	up := press(t, m, "enter")
	if m.dialog != nil || br.Called("create") {
		t.Fatalf("named create: dialog open %v, bridge asked to mint %v", m.dialog != nil, br.Called("create"))
	}
	if !strings.Contains(statuses(up), "created sandbox mybox") || m.Selected() != "mybox" {
		t.Fatalf("status %q, selected %q", statuses(up), m.Selected())
	}
	// the same name again: selected, not created twice
	press(t, m, "c")
	typeText("mybox")
	if up := press(t, m, "enter"); !strings.Contains(statuses(up), "already listed") || len(m.rows) != 1 {
		t.Fatalf("status %q, rows %d", statuses(up), len(m.rows))
	}
}

func TestAddByIDValidates(t *testing.T) {
	br := uitest.NewBridge()
	m := newModel(t, br, false)
	feed(t, m, m.Init())
	press(t, m, "a")
	if !m.Capturing() {
		t.Fatal("add did not open a prompt")
	}
	keys := []string{}
	for _, r := range "Bad-ID" {
		keys = append(keys, string(r))
	}
	press(t, m, append(keys, "enter")...)
	if !m.Capturing() || len(m.rows) != 0 {
		t.Fatalf("bad ID accepted or the form closed: rows=%d", len(m.rows))
	}
	// the form stays open with what was typed and says why, in the words of the hint
	if v := m.View(); !strings.Contains(v, `sandbox ID "Bad-ID": must be `+common.SandboxIDRule) || !strings.Contains(v, "Bad-ID") {
		t.Fatalf("the form does not show the error:\n%s", v)
	}
	press(t, m, "esc")
	press(t, m, "a")
	keys = keys[:0]
	for _, r := range "goodid" {
		keys = append(keys, string(r))
	}
	press(t, m, append(keys, "enter")...)
	if len(m.rows) != 1 || m.rows[0].ID != "goodid" || m.rows[0].Source != "added" {
		t.Fatalf("rows after add: %+v", m.rows)
	}
}

func TestDeleteNeedsConfirmation(t *testing.T) {
	br := uitest.NewBridge()
	m := newModel(t, br, false)
	m.remember("victimaaaa", "added")
	press(t, m, "d", "n")
	if br.Called("delete") {
		t.Fatal("deleted without confirmation")
	}
	press(t, m, "d", "y")
	if !br.Called("delete victimaaaa") {
		t.Fatal("confirmed delete did not call the bridge")
	}
	if len(m.rows) != 0 {
		t.Fatal("deleted sandbox still listed")
	}
}

func TestStopAndReplaceOnlyLocal(t *testing.T) {
	br := uitest.NewBridge()
	m := newModel(t, br, false)
	m.remember("remoteaaaa", "added")
	up := press(t, m, "s")
	if m.Capturing() || !strings.Contains(statuses(up), "only the local bridge") {
		t.Fatalf("remote stop not refused: %q", statuses(up))
	}
	m.ctx.Local = true
	press(t, m, "R", "y")
	if !br.Called("replace remoteaaaa") {
		t.Fatal("local replace not sent")
	}
}

func TestUnreachableShowsUnknownAndRetry(t *testing.T) {
	br := uitest.NewBridge()
	m := newModel(t, br, false)
	m.remember("someidaaaa", "added")
	run := true
	m.rows[0].Running = &run
	br.RunErr = &client.TransportError{Op: "GET running", Err: errors.New("connection refused")}
	up := feed(t, m, m.Init())
	var conn *common.ConnMsg
	for _, msg := range up {
		if c, ok := msg.(common.ConnMsg); ok {
			conn = &c
		}
	}
	if conn == nil || conn.Err == nil || conn.RetryAt.IsZero() {
		t.Fatalf("no connection error reported: %+v", up)
	}
	if !strings.Contains(m.View(), "UNKNOWN (RUNNING)") {
		t.Fatalf("last known state not shown as unknown:\n%s", m.View())
	}
	uitest.Golden(t, "sandboxes_unreachable", m.View(), *update)
	// recovery clears it
	br.RunErr = nil
	br.RunningOf["someidaaaa"] = client.RunningStatus{Running: true}
	up = feed(t, m, m.refresh())
	if strings.Contains(m.View(), "UNKNOWN") {
		t.Fatal("still unknown after recovery")
	}
	cleared := false
	for _, msg := range up {
		if c, ok := msg.(common.ConnMsg); ok && c.Err == nil {
			cleared = true
		}
	}
	if !cleared {
		t.Fatal("recovery not reported to the root")
	}
}

func TestRemoteIncarnationInferred(t *testing.T) {
	br := uitest.NewBridge()
	m := newModel(t, br, false)
	m.remember("remoteaaaa", "added")
	step := func(running bool) {
		br.RunningOf["remoteaaaa"] = client.RunningStatus{Running: running}
		feed(t, m, m.refresh())
	}
	step(true)
	if r := m.rows[0]; r.Incarnation != 1 || !r.Inferred {
		t.Fatalf("first start: %+v", r.Known)
	}
	step(true)
	step(false)
	step(true)
	if r := m.rows[0]; r.Incarnation != 2 || !r.Inferred {
		t.Fatalf("restart after stop should be incarnation 2 (inferred): %+v", r.Known)
	}
	if !strings.Contains(m.View(), "#2?") {
		t.Fatalf("inferred incarnation not marked:\n%s", m.View())
	}
}

func TestStoreIgnoresBadIDsAndIsPerBridge(t *testing.T) {
	dir := t.TempDir()
	a, b := NewStore(dir, "http://a"), NewStore(dir, "http://b")
	if a.Path() == b.Path() {
		t.Fatal("bridges share a store file")
	}
	if err := a.Save([]Known{{ID: "goodid"}, {ID: "BAD"}}); err != nil {
		t.Fatal(err)
	}
	got, err := a.Load()
	if err != nil || len(got) != 1 || got[0].ID != "goodid" {
		t.Fatalf("load: %+v %v", got, err)
	}
	if got, _ := b.Load(); len(got) != 0 {
		t.Fatal("other bridge sees the sandboxes")
	}
}

// TestFilterSortAndEsc: / filters the rows as you type, o sorts, esc clears the filter first (the
// screen takes it) and only then is the root's.
func TestFilterSortAndEsc(t *testing.T) {
	br := uitest.NewBridge()
	m := newModel(t, br, false)
	for _, id := range []string{"webaaaa", "dbaaaa", "webbbbb", "queueaaaa"} {
		m.remember(id, "added")
	}
	press(t, m, "/", "w", "e", "b")
	if !m.Capturing() {
		t.Fatal("typing the filter is not capturing keys")
	}
	v := m.View()
	if !strings.Contains(v, "Sandboxes (2 of 4)") || strings.Contains(v, "dbaaaa") || !strings.Contains(v, "webbbbb") {
		t.Fatalf("filter web:\n%s", v)
	}
	press(t, m, "enter", "j")
	if m.Capturing() || m.Selected() != "webbbbb" {
		t.Fatalf("after enter and j: capturing %v, selected %q", m.Capturing(), m.Selected())
	}
	if !m.Back() || strings.Contains(m.View(), "of 4") || m.Selected() != "webbbbb" {
		t.Fatalf("esc did not clear the filter or lost the cursor row:\n%s", m.View())
	}
	if m.Back() {
		t.Fatal("esc without a filter was taken by the screen")
	}
	press(t, m, "o", "g") // sorted by sandbox ID
	if m.Selected() != "dbaaaa" || !strings.Contains(m.View(), "sorted by sandbox ↑") {
		t.Fatalf("sort by ID: selected %q\n%s", m.Selected(), m.View())
	}
	press(t, m, "O", "g")
	if m.Selected() != "webbbbb" {
		t.Fatalf("reversed sort: selected %q", m.Selected())
	}
}

// TestNarrowLayout: at 80 columns every column header fits and the ID is whole.
func TestNarrowLayout(t *testing.T) {
	br := uitest.NewBridge()
	m := newModel(t, br, false)
	m.SetSize(80, 20)
	m.remember("abcdefghijklmnopqrstuvwx", "added")
	v := m.View()
	for _, l := range strings.Split(v, "\n") {
		if w := len([]rune(common.StripANSI(l))); w > 80 {
			t.Fatalf("line of %d cells at 80: %q", w, l)
		}
	}
	if !strings.Contains(v, "abcdefghijklmnopqrstuvwx") || !strings.Contains(v, "LAST SEEN") {
		t.Fatalf("at 80 columns:\n%s", v)
	}
}

func TestAddSeveralIDs(t *testing.T) {
	br := uitest.NewBridge()
	m := newModel(t, br, false)
	feed(t, m, m.Init())
	press(t, m, "a")
	// a pasted list arrives as one paste; its newlines become spaces in the one-line field
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("abc\nBAD!\ndef abc"), Paste: true})
	feed(t, m, cmd)
	up := press(t, m, "enter")
	var ids []string
	for _, r := range m.rows {
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, ",") != "abc,def" {
		t.Fatalf("rows after adding several: %v", ids)
	}
	if s := statuses(up); !strings.Contains(s, "added 2 sandboxes") || !strings.Contains(s, "BAD!") {
		t.Fatalf("status %q", s)
	}
}

// A tick alone redraws nothing (the ages move with the refreshes); hidden behind another screen
// the list stops refreshing at its next tick, and refreshes at once when it is back on top.
func TestIdleListTicksQuietly(t *testing.T) {
	br := uitest.NewBridge()
	br.Sandboxes = []client.SandboxInfo{{ID: "abcdefghijklmnopqrstuvwx", Running: true, Incarnation: 3, CreatedAt: uitest.T0.Add(-time.Hour)}}
	m := newModel(t, br, true)
	now := uitest.T0
	m.ctx.Now = func() time.Time { return now }
	feed(t, m, m.Init())
	before := m.View()
	now = now.Add(refreshEvery)
	_, cmd := m.Update(tickMsg{owner: m, gen: m.gen})
	if cmd == nil {
		t.Fatal("a tick on top did not refresh")
	}
	if after := m.View(); after != before {
		t.Fatalf("a tick alone changed the screen:\n%s\n---\n%s", before, after)
	}
	feed(t, m, cmd) // the refresh's answer: seen again, "0s ago" as before: nothing to redraw
	if after := m.View(); after != before {
		t.Fatalf("a refresh that saw nothing new changed the screen:\n%s\n---\n%s", before, after)
	}

	listCalls := func() int {
		n := 0
		for _, c := range br.CallList() {
			if c == "list" {
				n++
			}
		}
		return n
	}
	m.SetFocus(false)
	calls := listCalls()
	if _, cmd := m.Update(tickMsg{owner: m, gen: m.gen}); cmd != nil {
		t.Fatal("a hidden list refreshed")
	}
	if m.Resume() != nil {
		t.Fatal("resumed while still hidden")
	}
	m.SetFocus(true)
	feed(t, m, m.Resume())
	if got := listCalls(); got != calls+1 {
		t.Fatalf("back on top: %d list calls, want %d", got, calls+1)
	}
	if m.Resume() != nil {
		t.Fatal("resumed twice")
	}
}
