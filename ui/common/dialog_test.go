package common

import (
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/keymap"
)

func TestRouteToDialog(t *testing.T) {
	k := keymap.New()
	var answered *DialogResult
	answer := func(r *DialogResult) tea.Cmd { answered = r; return nil }

	var d *Dialog
	if open, _ := RouteToDialog(&d, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("y")}, k, answer); open || answered != nil {
		t.Fatalf("no dialog: open=%v answered=%v", open, answered)
	}

	d = NewConfirm("replace", "Replace?", "really?")
	// A key the dialog does not answer keeps it open and is not passed on.
	if open, _ := RouteToDialog(&d, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("x")}, k, answer); !open || d == nil || answered != nil {
		t.Fatalf("unanswered key: open=%v dialog=%v answered=%v", open, d, answered)
	}
	if open, _ := RouteToDialog(&d, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("y")}, k, answer); !open {
		t.Fatal("the answering key was not taken by the dialog")
	}
	if d != nil || answered == nil || !answered.OK || answered.ID != "replace" {
		t.Fatalf("after yes: dialog=%v answered=%+v", d, answered)
	}
}
