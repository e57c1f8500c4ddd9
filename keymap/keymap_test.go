package keymap

import (
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

func TestDefaultsMatch(t *testing.T) {
	k := New()
	if !key.Matches(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("j")}, k.Down) {
		t.Fatal("j should move down")
	}
	if !key.Matches(tea.KeyMsg{Type: tea.KeyEnter}, k.Open) {
		t.Fatal("enter should open")
	}
	if key.Matches(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("z")}, k.Quit) {
		t.Fatal("z must not quit")
	}
}

func TestApplyOverrides(t *testing.T) {
	k := New()
	if err := k.ApplyOverrides(map[string][]string{"quit": {"Q"}, "next_marker": {"}", "ctrl+n"}}); err != nil {
		t.Fatal(err)
	}
	if key.Matches(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")}, k.Quit) {
		t.Fatal("q still quits after override")
	}
	if !key.Matches(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("Q")}, k.Quit) {
		t.Fatal("Q does not quit after override")
	}
	if k.Quit.Help().Desc != "quit" || k.Quit.Help().Key != "Q" {
		t.Fatalf("help not updated: %+v", k.Quit.Help())
	}
	if !key.Matches(tea.KeyMsg{Type: tea.KeyCtrlN}, k.NextMarker) {
		t.Fatal("ctrl+n override not applied")
	}
}

func TestApplyOverridesRejectsAtomically(t *testing.T) {
	k := New()
	err := k.ApplyOverrides(map[string][]string{"quit": {"Q"}, "nope": {"z"}})
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("want error naming the unknown binding, got %v", err)
	}
	if !key.Matches(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")}, k.Quit) {
		t.Fatal("a failed override changed bindings")
	}
	if err := k.ApplyOverrides(map[string][]string{"help": {}}); err == nil {
		t.Fatal("empty key list accepted")
	}
}

func TestMarkdownListsEveryBinding(t *testing.T) {
	k := New()
	md := k.Markdown()
	for _, n := range k.Names() {
		if !strings.Contains(md, "`"+n+"`") {
			t.Errorf("markdown misses %s", n)
		}
	}
	if !strings.Contains(md, "| `space` | select for multi-follow |") {
		t.Errorf("space not rendered readably:\n%s", md)
	}
}

func TestFullHelpHasScreenAndGlobalKeys(t *testing.T) {
	k := New()
	var n int
	for _, col := range k.FullHelp(Logs) {
		n += len(col)
	}
	if want := len(k.Bindings(Logs)) + len(k.Bindings(Global)); n != want {
		t.Fatalf("full help has %d keys, want %d", n, want)
	}
}

func TestNoDuplicateKeysWithinAScreen(t *testing.T) {
	k := New()
	for _, s := range []Screen{Sandboxes, Sandbox, Logs} {
		seen := map[string]string{}
		for _, e := range k.entries() {
			if e.screen != s && e.screen != Global {
				continue
			}
			for _, kk := range e.b.Keys() {
				if prev, ok := seen[kk]; ok {
					t.Errorf("screen %s: key %q bound to both %s and %s", s, kk, prev, e.name)
				}
				seen[kk] = e.name
			}
		}
	}
}

// The Terminals tab of the sandbox screen uses the pane's attach/interrupt/terminate keys, so they
// must not collide with the sandbox screen's own keys or the global ones.
func TestTerminalActionsFreeOnSandboxScreen(t *testing.T) {
	k := New()
	used := map[string]string{}
	for _, e := range k.entries() {
		if e.screen == Sandbox || e.screen == Global {
			for _, kk := range e.b.Keys() {
				used[kk] = e.name
			}
		}
	}
	for name, b := range map[string]key.Binding{"attach": k.Attach, "interrupt": k.Interrupt, "terminate": k.Terminate} {
		for _, kk := range b.Keys() {
			if prev, ok := used[kk]; ok {
				t.Errorf("%s key %q already means %s on the sandbox screen", name, kk, prev)
			}
		}
	}
}

func TestLeaveTerminalOverride(t *testing.T) {
	k := New()
	if !key.Matches(tea.KeyMsg{Type: tea.KeyCtrlCloseBracket}, k.LeavePane) {
		t.Fatal("ctrl+] should leave the pane by default")
	}
	if err := k.ApplyOverrides(map[string][]string{"leave_terminal": {"ctrl+g"}}); err != nil {
		t.Fatal(err)
	}
	if !key.Matches(tea.KeyMsg{Type: tea.KeyCtrlG}, k.LeavePane) || key.Matches(tea.KeyMsg{Type: tea.KeyCtrlCloseBracket}, k.LeavePane) {
		t.Fatal("leave_terminal override not applied")
	}
	if !strings.Contains(k.Markdown(), "| `ctrl+g` | leave terminal") {
		t.Fatalf("markdown does not show the override:\n%s", k.Markdown())
	}
}

// TestOverrideClashesRefused: a key that a screen would then handle two ways is refused, naming
// both bindings; the same key on two screens that never share it is fine; every problem is
// reported, not only the first.
func TestOverrideClashesRefused(t *testing.T) {
	k := New()
	ps := k.Check(map[string][]string{"quit": {"j"}})
	if len(ps) == 0 || ps[0].Name != "quit" || ps[0].Other != "down" {
		t.Fatalf("quit: [j] not refused as a clash with down: %+v", ps)
	}
	if err := k.ApplyOverrides(map[string][]string{"quit": {"j"}}); err == nil || !strings.Contains(err.Error(), `"down"`) {
		t.Fatalf("ApplyOverrides accepted a clash: %v", err)
	}
	if got := k.Quit.Keys(); strings.Join(got, ",") != "q,ctrl+c" {
		t.Fatalf("a refused override changed quit: %v", got)
	}
	// s is stop on the sandboxes screen and shell on the sandbox screen: no screen has both
	if ps := k.Check(map[string][]string{"save": {"x"}}); len(ps) != 0 {
		t.Fatalf("save: [x] (kill is not on the log view) refused: %+v", ps)
	}
	ps = k.Check(map[string][]string{"help": {"ctrl+zz"}, "nosuch": {"x"}, "quit": {}})
	if len(ps) != 3 { // (quit: [] is not checked for clashes)
		t.Fatalf("want every problem (3), got %+v", ps)
	}
}

// TestDefaultsDoNotClash: no screen handles a default key two ways.
func TestDefaultsDoNotClash(t *testing.T) {
	k := New()
	all := map[string][]string{}
	for _, n := range k.Names() {
		all[n] = nil
	}
	if ps := k.clashes(all); len(ps) != 0 {
		t.Fatalf("default keys clash: %+v", ps)
	}
}
