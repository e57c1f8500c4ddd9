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
