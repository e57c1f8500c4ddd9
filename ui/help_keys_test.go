package ui

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/keymap"
	"sandscope/record"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
)

// keyMsgs maps every key name the key map uses to the message Bubble Tea delivers for it.
func keyMsgs(k *keymap.KeyMap) map[string]tea.KeyMsg {
	named := map[string]tea.KeyType{}
	for t := tea.KeyType(-256); t <= 256; t++ {
		if t == tea.KeyRunes {
			continue
		}
		if s := (tea.Key{Type: t}).String(); s != "" && !strings.HasPrefix(s, "unknown") {
			named[s] = t
		}
	}
	out := map[string]tea.KeyMsg{}
	for _, s := range keymap.ScreenOrder() {
		for _, b := range k.Bindings(s) {
			for _, name := range b.Keys() {
				switch t, ok := named[name]; {
				case name == " ":
					out[name] = tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
				case ok:
					out[name] = tea.KeyMsg{Type: t}
				default:
					out[name] = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(name)}
				}
			}
		}
	}
	return out
}

// helpBridge is a fake bridge whose sandbox "shopweb" has three incarnations, three processes of
// the current one (one with more output than a page), and three terminals; there are three
// sandboxes. Every table has a row above and below its cursor once the cursor is moved down one.
func helpBridge() *uitest.Bridge {
	br := uitest.NewBridge()
	t0 := uitest.T0
	for i, id := range []string{"shopweb", "nightly", "billing"} {
		br.Sandboxes = append(br.Sandboxes, client.SandboxInfo{ID: id, Running: true, Incarnation: 3, CreatedAt: t0.Add(-time.Duration(i+1) * time.Hour)})
	}
	ch := make(chan client.SandboxEvent, 64)
	for _, ev := range shopwebEvents() {
		ch <- ev
	}
	br.Watches["shopweb"] = ch
	logs := make(chan client.LogEvent, 64)
	for i := 1; i <= 40; i++ {
		logs <- client.LogEvent{Kind: client.Data, Cursor: fmt.Sprintf("c%d", i), Time: t0.Add(time.Duration(i-90) * time.Second), Stream: client.Stdout,
			Data: []byte(fmt.Sprintf("line %d {\"level\":\"info\"} of the output, long enough to wrap at the width this test uses %s\n", i, strings.Repeat("x", 60)))}
	}
	br.Follows["p2"] = logs
	term := uitest.NewTermConn()
	term.Ch <- client.TermEvent{Kind: client.TermReady}
	br.TermConns = map[string]*uitest.TermConn{"tp2": term}
	return br
}

// shopwebEvents are what the watcher of "shopweb" reports: three incarnations, then three
// processes and three terminals of the current one.
func shopwebEvents() []client.SandboxEvent {
	t0 := uitest.T0
	inc := func(n int) client.Incarnation { return client.Incarnation{Number: n} }
	evs := []client.SandboxEvent{
		{Kind: client.SandboxStarted, Time: t0.Add(-3 * time.Hour), Incarnation: inc(1)},
		{Kind: client.IncarnationChanged, Time: t0.Add(-2 * time.Hour), Previous: inc(1), Incarnation: inc(2), Evidence: []string{"the bridge reports incarnation 2"}},
		{Kind: client.IncarnationChanged, Time: t0.Add(-time.Hour), Previous: inc(2), Incarnation: inc(3), Evidence: []string{"the bridge reports incarnation 3"}},
	}
	for i, id := range []string{"p1", "p2", "p3"} {
		evs = append(evs,
			client.SandboxEvent{Kind: client.ProcessAppeared, Time: t0.Add(-time.Duration(90-i) * time.Second), Incarnation: inc(3),
				Process: &client.Process{ID: id, PID: 10 + i, Command: []string{"sh", "-c", "work " + id}, Cwd: "/w", State: "running", StartedAt: t0.Add(-time.Minute), Incarnation: 3}},
			client.SandboxEvent{Kind: client.TerminalAppeared, Time: t0.Add(-time.Duration(50-i) * time.Second), Incarnation: inc(3),
				Terminal: &client.Terminal{ID: "t" + id, PID: 70 + i, Command: []string{"bash"}, Status: "running", Incarnation: 3}})
	}
	return evs
}

// helpScreens are the places the help test visits, each reached from a fresh root: the keys it
// sends after the window size, with the command depth each needs.
var helpScreens = []struct {
	name   string
	title  string // the top screen's crumb once there
	record bool   // a root with a record (the all-runs screen reads it)
	setup  []tea.Msg
}{
	{"all runs", "all runs", true, []tea.Msg{uitest.Key("W"), uitest.Key("g"), uitest.Key("j")}},
	{"sandboxes", "sandboxes", false, []tea.Msg{uitest.Key("g"), uitest.Key("j")}},
	{"sandboxes with a filter", "sandboxes", false, []tea.Msg{uitest.Key("/"), uitest.Key("o"), uitest.Key("enter"), uitest.Key("g"), uitest.Key("j")}},
	{"sandbox: Processes", "shopweb", false, []tea.Msg{common.OpenSandboxMsg{ID: "shopweb"}, uitest.Key("j")}},
	{"sandbox: Terminals", "shopweb", false, []tea.Msg{common.OpenSandboxMsg{ID: "shopweb"}, uitest.Key("tab"), uitest.Key("j")}},
	{"sandbox: Incarnations", "shopweb", false, []tea.Msg{common.OpenSandboxMsg{ID: "shopweb"}, uitest.Key("tab"), uitest.Key("tab"), uitest.Key("j")}},
	{"log view", "logs", false, []tea.Msg{common.OpenSandboxMsg{ID: "shopweb"}, uitest.Key("j"), uitest.Key("enter"), uitest.Key("g"), uitest.Key("j")}},
	{"terminal pane (unfocused)", "terminal", false, []tea.Msg{common.OpenSandboxMsg{ID: "shopweb"}, uitest.Key("tab"), uitest.Key("j"), uitest.Key("enter"), tea.KeyMsg{Type: tea.KeyCtrlCloseBracket}}},
}

// TestHelpMatchesHandledKeys checks, on every screen, that the help overlay lists exactly the keys
// the screen acts on: each key of the key map is sent to a fresh copy of the screen, and it must
// change the screen or ask for something (a command) if and only if the help lists it. The
// one-line hints offer nothing the help does not list.
func TestHelpMatchesHandledKeys(t *testing.T) {
	const w, h = 110, 16 // short: the log has more lines than a page
	build := func(t *testing.T, withRecord bool, setup []tea.Msg) *Model {
		var m *Model
		if withRecord {
			m = newRootWith(t, helpBridge(), Options{})
		} else {
			m = newPlainRoot(t, helpBridge())
		}
		step(m, tea.WindowSizeMsg{Width: w, Height: h}, 0)
		for _, msg := range uitest.Exec(m.Init(), wait) {
			step(m, msg, 2)
		}
		if withRecord {
			// what the record's watcher would have written of shopweb
			for _, ev := range shopwebEvents() {
				e := record.FromSandboxEvent(ev)
				e.Sandbox = "shopweb"
				m.ctx.Record.Add(e)
			}
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if st := m.ctx.Record.State("shopweb"); len(st.Processes) == 3 && len(st.Terminals) == 3 {
					break
				}
			}
		}
		for _, msg := range setup {
			// each screen gets runes of its own: the filter's text input sanitizes a key's
			// runes in place, and screens are built on several goroutines at once
			if k, ok := msg.(tea.KeyMsg); ok {
				k.Runes = slices.Clone(k.Runes)
				msg = k
			}
			step(m, msg, 3)
		}
		return m
	}
	for _, sc := range helpScreens {
		t.Run(sc.name, func(t *testing.T) {
			m := build(t, sc.record, sc.setup)
			if got := m.top().Title(); got != sc.title {
				t.Fatalf("the setup reached %q, not %q:\n%s", got, sc.title, m.View())
			}
			listed := map[string]string{}
			for _, col := range m.helpColumns() {
				for _, b := range col {
					for _, k := range b.Keys() {
						listed[k] = b.Help().Desc
					}
				}
			}
			for _, b := range m.top().ShortHelp() {
				if b.Enabled() && !key.Matches(keyMsgs(m.ctx.Keys)[b.Keys()[0]], flatten(m.helpColumns())...) {
					t.Errorf("the hints offer %q (%s), which the help does not list", b.Help().Key, b.Help().Desc)
				}
			}
			msgs := keyMsgs(m.ctx.Keys)
			names := make([]string, 0, len(msgs))
			for n := range msgs {
				names = append(names, n)
			}
			sort.Strings(names)
			// each key on its own fresh screen, several at once (they mostly wait on the fake bridge)
			ref := m.View()
			var mu sync.Mutex
			acted := map[string]bool{}
			sem := make(chan struct{}, 16)
			var wg sync.WaitGroup
			for _, n := range names {
				wg.Add(1)
				sem <- struct{}{}
				go func(n string) {
					defer func() { <-sem; wg.Done() }()
					// a listed key that did nothing gets two more fresh screens (a busy machine
					// can leave a fixture short of its rows); one that does nothing stays so;
					// and a key the help does not list that seemed to act gets two more: a screen
					// drawn by a goroutine of its own (the terminal pane) can change between two
					// views by itself, so only a key that acts every time acts
					_, inHelp := listed[n]
					did := false
					for try := 0; try < 3; try++ {
						fresh := build(t, sc.record, sc.setup)
						// on a retry, a fixture that came out short of the reference screen's
						// rows (its commands' answers missed the wait on a loaded machine, as
						// under the race detector) is built again, a few times at most
						for rebuilt := 0; try > 0 && rebuilt < 5 && fresh.View() != ref; rebuilt++ {
							fresh = build(t, sc.record, sc.setup)
						}
						before := fresh.View()
						_, cmd := fresh.Update(msgs[n])
						did = cmd != nil || fresh.View() != before
						if did && fresh.View() == before && unsupportedOnly(cmd) {
							did = false // a key of what this bridge cannot do: not listed, it only says so
						}
						if did == inHelp {
							break // as the help says
						}
					}
					mu.Lock()
					acted[n] = did
					mu.Unlock()
				}(n)
			}
			wg.Wait()
			for _, n := range names {
				desc, inHelp := listed[n]
				switch {
				case acted[n] && !inHelp:
					t.Errorf("key %q acts but the help does not list it", n)
				case !acted[n] && inHelp:
					t.Errorf("the help lists %q (%s) but it does nothing", n, desc)
				}
			}
			if t.Failed() {
				t.Logf("screen:\n%s", m.View())
			}
		})
	}
}

// unsupportedOnly reports a command that only says the bridge cannot do what the key asks.
func unsupportedOnly(cmd tea.Cmd) bool {
	out := uitest.Exec(cmd, wait)
	for _, msg := range out {
		s, ok := msg.(common.StatusMsg)
		if !ok || !strings.HasPrefix(s.Text, "not offered by this bridge") {
			return false
		}
	}
	return len(out) > 0
}

func flatten(cols [][]key.Binding) []key.Binding {
	var out []key.Binding
	for _, c := range cols {
		out = append(out, c...)
	}
	return out
}
