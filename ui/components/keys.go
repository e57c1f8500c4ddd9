package components

import (
	"slices"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// KeyAction is one key a screen handles where the user is: its binding (keys and help text) and
// what it does.
type KeyAction struct {
	Binding key.Binding
	Do      func() tea.Cmd
}

// Act pairs a binding with what it does.
func Act(b key.Binding, do func() tea.Cmd) KeyAction { return KeyAction{Binding: b, Do: do} }

// Relabel is b (its keys, overrides included) with another description, for a screen that says
// what the key does there ("enter open its log").
func Relabel(b key.Binding, desc string) key.Binding {
	b.SetHelp(b.Help().Key, desc)
	return b
}

// KeyActions is a screen's key table for where the user is (its tab, its state). The same table
// dispatches the keys (Handle) and makes the help (Bindings), so help offers exactly the keys that
// act, and a key that acts is in help.
type KeyActions []KeyAction

// Handle runs the action of the first enabled binding msg matches. ok is false when none does:
// the key is not the screen's here.
func (a KeyActions) Handle(msg tea.KeyMsg) (cmd tea.Cmd, ok bool) {
	for _, x := range a {
		if x.Binding.Enabled() && key.Matches(msg, x.Binding) {
			if x.Do == nil {
				return nil, true
			}
			return x.Do(), true
		}
	}
	return nil, false
}

// Bindings are the table's enabled bindings, for help. A binding whose keys all belong to an
// earlier one is left out (Handle never reaches it).
func (a KeyActions) Bindings() []key.Binding {
	var out []key.Binding
	seen := map[string]bool{}
	for _, x := range a {
		if !x.Binding.Enabled() {
			continue
		}
		ks := x.Binding.Keys()
		if !slices.ContainsFunc(ks, func(k string) bool { return !seen[k] }) {
			continue
		}
		for _, k := range ks {
			seen[k] = true
		}
		out = append(out, x.Binding)
	}
	return out
}
