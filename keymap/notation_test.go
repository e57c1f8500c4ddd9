package keymap

import (
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

func TestParseKeyNotations(t *testing.T) {
	for in, want := range map[string]Key{
		"ctrl+]":     {Name: "ctrl+]", Byte: 0x1d, Terminal: true},
		"ctrl-]":     {Name: "ctrl+]", Byte: 0x1d, Terminal: true},
		"C-a":        {Name: "ctrl+a", Byte: 1, Terminal: true},
		"^G":         {Name: "ctrl+g", Byte: 7, Terminal: true},
		"ctrl+i":     {Name: "tab", Byte: 9, Terminal: true},
		"ctrl-space": {Name: "ctrl+@", Byte: 0, Terminal: true},
		"q":          {Name: "q", Byte: 'q', Terminal: true},
		"T":          {Name: "T", Byte: 'T', Terminal: true},
		" ":          {Name: " ", Byte: ' ', Terminal: true},
		"space":      {Name: " ", Byte: ' ', Terminal: true},
		"Enter":      {Name: "enter", Byte: 13, Terminal: true},
		"esc":        {Name: "esc", Byte: 27, Terminal: true},
		"pgdn":       {Name: "pgdown"},
		"shift+tab":  {Name: "shift+tab"},
		"f5":         {Name: "f5"},
		"ctrl+up":    {Name: "ctrl+up"},
		"alt+x":      {Name: "alt+x"},
		"é":          {Name: "é"},
	} {
		got, err := ParseKey(in)
		if err != nil || got != want {
			t.Errorf("ParseKey(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
}

// Bad input is an error that names the key; nothing panics.
func TestParseKeyBadInput(t *testing.T) {
	for _, in := range []string{"", "   ", "ctrl+", "ctrl-", "ctrl+é", "ctrl+12", "ctrl+€", "hyper+x", "enterr",
		"alt+", "\x1b", "\x00", "\xff", "ctrl+\xff", "qq", "f99", "ctrl+%"} {
		_, err := ParseKey(in)
		if err == nil {
			t.Errorf("ParseKey(%q) accepted", in)
			continue
		}
		if !strings.Contains(err.Error(), "key") {
			t.Errorf("ParseKey(%q): error does not say what: %v", in, err)
		}
	}
}

// Every key the default key map binds parses to itself: the notation is Bubble Tea's.
func TestDefaultKeysParse(t *testing.T) {
	for _, name := range New().Names() {
		for _, nb := range New().entries() {
			if nb.name != name {
				continue
			}
			for _, k := range nb.b.Keys() {
				got, err := ParseKey(k)
				if err != nil || got.Name != k {
					t.Errorf("%s: key %q parses to %+v, %v", name, k, got, err)
				}
			}
		}
	}
}

func TestParseDetach(t *testing.T) {
	d, err := ParseDetach("ctrl-a d")
	if err != nil || d.Prefix.Byte != 1 || d.Second == nil || d.Second.Byte != 'd' || d.Spec != "ctrl-a d" {
		t.Fatalf("ctrl-a d: %+v %v", d, err)
	}
	d, err = ParseDetach(" ctrl+] ")
	if err != nil || d.Prefix.Byte != 0x1d || d.Second != nil {
		t.Fatalf("ctrl+]: %+v %v", d, err)
	}
	for _, bad := range []string{"", "a", "ctrl-a ctrl-a", "ctrl-a b c", "ctrl-a alt+x", "enter", "f1", "ctrl+up", "ctrl-a é", "ctrl-", "^"} {
		if _, err := ParseDetach(bad); err == nil || !strings.Contains(err.Error(), "detach key") {
			t.Errorf("ParseDetach(%q) = %v", bad, err)
		}
	}
}

// Overrides take any notation and are matched as Bubble Tea names keys; bad keys are refused
// before anything changes.
func TestOverridesUseTheNotation(t *testing.T) {
	k := New()
	if err := k.ApplyOverrides(map[string][]string{"leave_terminal": {"ctrl-g"}, "quit": {"Q"}, "jsonl": {"space"}}); err != nil {
		t.Fatal(err)
	}
	if !key.Matches(tea.KeyMsg{Type: tea.KeyCtrlG}, k.LeavePane) || k.LeavePane.Help().Key != "ctrl+g" {
		t.Fatalf("ctrl-g not matched as ctrl+g: %v %q", k.LeavePane.Keys(), k.LeavePane.Help().Key)
	}
	if !key.Matches(tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}, k.JSONL) {
		t.Fatalf("space not matched: %v", k.JSONL.Keys())
	}
	before := k.Help.Keys()
	err := k.ApplyOverrides(map[string][]string{"help": {"ctrl+é"}})
	if err == nil || !strings.Contains(err.Error(), `"help"`) || !strings.Contains(err.Error(), "ctrl+é") {
		t.Fatalf("bad key: %v", err)
	}
	if strings.Join(k.Help.Keys(), ",") != strings.Join(before, ",") {
		t.Fatal("a refused override changed the binding")
	}
}
