package ui

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/themes"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
)

func newRootWith(t *testing.T, br driver.Driver, o Options) *Model {
	t.Helper()
	p, _ := themes.Builtin("dark")
	o.Driver, o.BridgeLabel, o.BridgeURL, o.Local = br, "http://127.0.0.1:7681 (embedded)", "local:/tmp/x", true
	o.StateDir, o.CacheDir = t.TempDir(), t.TempDir()
	o.Styles = themes.New(p, themes.AsciiRenderer())
	o.Now = func() time.Time { return uitest.T0 }
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	return m
}

func TestContextSwitchResetsScreens(t *testing.T) {
	local := uitest.NewBridge()
	local.Sandboxes = []client.SandboxInfo{{ID: "localbox", Running: true}}
	remote := uitest.NewBridge()
	remote.Sandboxes = []client.SandboxInfo{{ID: "cloudbox", Running: true}}
	var asked []string
	m := newRootWith(t, local, Options{
		Contexts: []string{"cloud", "local (embedded)"}, EmbeddedContext: "local (embedded)",
		Switch: func(ctx context.Context, name string) (Target, error) {
			asked = append(asked, name)
			if name == "broken" {
				return Target{}, errors.New("token command failed")
			}
			return Target{Driver: remote, BridgeLabel: "http://127.0.0.1:9999", BridgeURL: "http://127.0.0.1:9999", Local: true, ContextName: name}, nil
		},
	})
	for _, msg := range uitest.Exec(m.Init(), wait) {
		step(m, msg, 2)
	}
	step(m, uitest.Key("enter"), 2) // open localbox
	if len(m.stack) != 2 {
		t.Fatalf("stack %d", len(m.stack))
	}
	step(m, uitest.Key("C"), 0)
	v := m.View()
	if !strings.Contains(v, "Switch context") || !strings.Contains(v, "cloud") || !strings.Contains(v, "● local (embedded) (current)") {
		t.Fatalf("no picker, or the current bridge is not marked:\n%s", v)
	}
	step(m, uitest.Key("up"), 0)
	step(m, uitest.Key("enter"), 3)
	if len(asked) != 1 || asked[0] != "cloud" {
		t.Fatalf("switch asked %v", asked)
	}
	if len(m.stack) != 1 {
		t.Fatalf("screens not reset: stack %d", len(m.stack))
	}
	v = m.View()
	for _, want := range []string{"context cloud", "local bridge http://127.0.0.1:9999", "cloudbox"} {
		if !strings.Contains(v, want) {
			t.Errorf("after the switch the screen lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "localbox") {
		t.Errorf("the old bridge's sandboxes are still shown:\n%s", v)
	}
}

// The context picker filters with /, as every table does: typing narrows the contexts, enter
// keeps the filter, enter again switches to the one under the cursor; esc clears the filter
// before it closes the picker; g and G jump to the first and last context.
func TestContextPickerFilters(t *testing.T) {
	br := uitest.NewBridge()
	var asked []string
	m := newRootWith(t, br, Options{
		Contexts: []string{"prod-eu", "prod-us", "staging-eu", "staging-us", "dev"},
		Switch: func(ctx context.Context, name string) (Target, error) {
			asked = append(asked, name)
			return Target{}, errors.New("not reachable in this test")
		},
	})
	step(m, uitest.Key("C"), 0)
	step(m, uitest.Key("G"), 0)
	if v := m.View(); !strings.Contains(v, "> ● dev") && !strings.Contains(v, ">   dev") {
		t.Fatalf("G did not reach the last context:\n%s", v)
	}
	step(m, uitest.Key("g"), 0)
	step(m, uitest.Key("/"), 0)
	for _, k := range uitest.Type("stag") {
		step(m, k, 0)
	}
	v := m.View()
	if strings.Contains(v, "prod-eu") || !strings.Contains(v, "staging-eu") || !strings.Contains(v, "staging-us") || !strings.Contains(v, "2 of 5") {
		t.Fatalf("the filter did not narrow the contexts:\n%s", v)
	}
	step(m, uitest.Key("enter"), 0) // keeps the filter
	step(m, uitest.Key("down"), 0)
	step(m, uitest.Key("esc"), 0) // clears the filter, the picker stays
	v = m.View()
	if !strings.Contains(v, "Switch context") || !strings.Contains(v, "prod-eu") {
		t.Fatalf("esc with a filter closed the picker or kept the filter:\n%s", v)
	}
	step(m, uitest.Key("/"), 0)
	for _, k := range uitest.Type("us") {
		step(m, k, 0)
	}
	step(m, uitest.Key("enter"), 0)
	step(m, uitest.Key("down"), 0)
	step(m, uitest.Key("enter"), 2)
	if len(asked) != 1 || asked[0] != "staging-us" {
		t.Fatalf("switch asked %v, want staging-us (the second match of \"us\")", asked)
	}
	step(m, uitest.Key("C"), 0)
	step(m, uitest.Key("/"), 0)
	for _, k := range uitest.Type("zzz") {
		step(m, k, 0)
	}
	step(m, uitest.Key("enter"), 0)
	step(m, uitest.Key("enter"), 2)
	if v := m.View(); len(asked) != 1 || !strings.Contains(v, "nothing matches") {
		t.Fatalf("enter with nothing shown chose %v:\n%s", asked, v)
	}
	step(m, uitest.Key("esc"), 0)
	step(m, uitest.Key("esc"), 0)
	if v := m.View(); strings.Contains(v, "Switch context") {
		t.Fatalf("esc did not close the picker:\n%s", v)
	}
}

func TestContextSwitchFailureKeepsScreens(t *testing.T) {
	br := uitest.NewBridge()
	m := newRootWith(t, br, Options{
		Contexts: []string{"broken"},
		Switch: func(ctx context.Context, name string) (Target, error) {
			return Target{}, errors.New("token command failed")
		},
	})
	old := m.ctx
	step(m, uitest.Key("C"), 0)
	step(m, uitest.Key("enter"), 2)
	if m.ctx != old {
		t.Fatal("a failed switch replaced the context")
	}
	if v := m.View(); !strings.Contains(v, "token command failed") {
		t.Fatalf("the failure is not shown:\n%s", v)
	}
}

func TestFirstRunDemoOffer(t *testing.T) {
	for _, yes := range []bool{true, false} {
		br := uitest.NewBridge()
		var mu sync.Mutex
		var decided []bool
		started := make(chan context.Context, 1)
		m := newRootWith(t, br, Options{Demo: &DemoOptions{
			Offer: true, Sandbox: "demo",
			Start: func(ctx context.Context) error { started <- ctx; return nil },
			Decided: func(a bool) error {
				mu.Lock()
				decided = append(decided, a)
				mu.Unlock()
				return nil
			},
		}})
		m.Init()
		if v := m.View(); !strings.Contains(v, "Start the demo scene?") {
			t.Fatalf("no offer on the first run:\n%s", v)
		}
		k := "n"
		if yes {
			k = "y"
		}
		step(m, uitest.Key(k), 2)
		mu.Lock()
		if len(decided) != 1 || decided[0] != yes {
			t.Fatalf("answer %v recorded as %v", yes, decided)
		}
		mu.Unlock()
		select {
		case ctx := <-started:
			if !yes {
				t.Fatal("the demo started after n")
			}
			m.Close()
			if ctx.Err() == nil {
				t.Fatal("the demo's context outlives the TUI")
			}
		default:
			if yes {
				t.Fatal("the demo did not start after y")
			}
		}
	}
}

func TestAttachFailureIsShown(t *testing.T) {
	br := uitest.NewBridge()
	m := newRootWith(t, br, Options{})
	step(m, common.AttachTerminalMsg{Sandbox: "sb", Terminal: client.Terminal{ID: "t1"}}, 2)
	if !br.Called("connect t1") {
		t.Fatalf("no connection attempt: %v", br.CallList())
	}
	if v := m.View(); !strings.Contains(v, "attach terminal t1") {
		t.Fatalf("the failure is not shown:\n%s", v)
	}
}

func TestDemoOfferCtrlCQuitsWithoutAnswering(t *testing.T) {
	br := uitest.NewBridge()
	answered := false
	m := newRootWith(t, br, Options{Demo: &DemoOptions{Offer: true,
		Start:   func(context.Context) error { return nil },
		Decided: func(bool) error { answered = true; return nil },
	}})
	m.Init()
	_, cmd := m.Update(uitest.Key("ctrl+c"))
	if cmd == nil {
		t.Fatal("ctrl+c on the offer did not quit")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok || answered {
		t.Fatalf("ctrl+c: quit %T, answer recorded %v", cmd(), answered)
	}
}

// T on an unfocused pane asks how to end its terminal; ctrl-D goes through the pane's own
// connection (no second connection, no terminate), terminate goes to the bridge.
func TestPaneEndAsksAndSendsEOF(t *testing.T) {
	br := uitest.NewBridge()
	conn := uitest.NewTermConn()
	br.TermConns = map[string]*uitest.TermConn{"t1": conn}
	m := newRootWith(t, br, Options{})
	step(m, common.OpenTerminalMsg{Sandbox: "sb", Terminal: client.Terminal{ID: "t1", Status: "running"}}, 2)
	if !m.paneOnTop() {
		t.Fatalf("no pane: %v\n%s", br.CallList(), m.View())
	}
	conn.Ch <- client.TermEvent{Kind: client.TermReady}
	step(m, tea.KeyMsg{Type: tea.KeyCtrlCloseBracket}, 1) // keys back to the TUI
	step(m, uitest.Key("T"), 2)
	v := m.View()
	if !strings.Contains(v, "End terminal t1") || !strings.Contains(v, "KILLED KILL") {
		t.Fatalf("T did not ask:\n%s", v)
	}
	step(m, uitest.Key("enter"), 1)
	for i := 0; ; i++ {
		if w, _ := conn.Written(); w == "\x04" {
			break
		}
		if i == 400 {
			w, _ := conn.Written()
			t.Fatalf("ctrl-D not sent through the pane: %q", w)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if v := m.View(); !strings.Contains(v, "sent ctrl-D") || br.Called("terminate") || br.Called("connect t1 0x0") {
		t.Fatalf("calls %v:\n%s", br.CallList(), v)
	}
	step(m, uitest.Key("T"), 2)
	step(m, uitest.Key("down"), 0)
	step(m, uitest.Key("enter"), 2)
	if !br.Called("terminate sb t1") {
		t.Fatalf("terminate not sent: %v\n%s", br.CallList(), m.View())
	}
}
