package tui

import (
	"fmt"
	"testing"
)

// TestPaneKeyOverrides: the detach key becomes the embedded pane's leave key unless the config
// binds one, and the config's key map is left as it was.
func TestPaneKeyOverrides(t *testing.T) {
	for _, c := range []struct {
		keys   map[string][]string
		detach string
		want   []string // leave_terminal; nil = not set
	}{
		{nil, "ctrl+]", []string{"ctrl+]"}},
		{nil, "ctrl-g", []string{"ctrl+g"}},
		{nil, "^G", []string{"ctrl+g"}},
		{nil, "ctrl-a d", nil}, // a two-key detach is for full-screen attach only
		{map[string][]string{"leave_terminal": {"f12"}}, "ctrl-g", []string{"f12"}},
	} {
		got := paneKeyOverrides(c.keys, c.detach)
		if fmt.Sprint(got["leave_terminal"]) != fmt.Sprint(c.want) {
			t.Errorf("keys %v, detachKey %q: leave_terminal = %v, want %v", c.keys, c.detach, got["leave_terminal"], c.want)
		}
	}
	in := map[string][]string{"quit": {"Q"}}
	paneKeyOverrides(in, "ctrl-g")
	if len(in) != 1 {
		t.Errorf("the config's key map was modified: %v", in)
	}
}
