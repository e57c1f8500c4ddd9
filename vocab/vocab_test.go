package vocab

import (
	"strings"
	"testing"

	"sandscope/client"
	"sandscope/themes"
)

func TestEndingOneWordPerState(t *testing.T) {
	for _, c := range []struct {
		e    *client.Exit
		want string
	}{
		{nil, "EXITED ?"},
		{&client.Exit{}, "EXITED 0"},
		{&client.Exit{Code: 3}, "EXITED 3"},
		{&client.Exit{Code: 143, Signal: 15}, "KILLED TERM"},
		{&client.Exit{Code: 137, Signal: 9}, "KILLED KILL"},
		{&client.Exit{Code: 128 + 42, Signal: 42}, "KILLED SIG42"},
		{&client.Exit{Code: 124, TimedOut: true}, "TIMED OUT"},
	} {
		if _, got := Ending(c.e); got != c.want {
			t.Errorf("Ending(%+v) = %q, want %q", c.e, got, c.want)
		}
	}
	if got := EndingDetail(&client.Exit{Code: 143, Signal: 15}); got != "KILLED TERM (exit 143)" {
		t.Errorf("EndingDetail = %q", got)
	}
}

func TestStateSanitises(t *testing.T) {
	_, w, _ := State("\x1b]2;PWNED\x07weird\u202e", nil, nil)
	if strings.ContainsAny(w, "\x1b\x07\u202e") {
		t.Errorf("State word carries raw controls: %q", w)
	}
	_, w, ended := State("error", nil, &client.RunError{Code: "X\x9b2J"})
	if !ended || strings.ContainsRune(w, 0x9b) || !strings.HasPrefix(w, "ERROR X") {
		t.Errorf("error word = %q (ended %v)", w, ended)
	}
}

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "marker", "0 markers"}, {1, "marker", "1 marker"}, {2, "interruption", "2 interruptions"},
		{1, "process|processes", "1 process"}, {3, "process|processes", "3 processes"},
	} {
		if got := Count(c.n, c.noun); got != c.want {
			t.Errorf("Count(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}

// The stable driver's endings read the same everywhere: a reported code is never EXITED nor the
// success badge, an ending without a code says so, and INTERRUPTED is not final.
func TestUnconfirmedEndings(t *testing.T) {
	for _, c := range []struct {
		state string
		exit  *client.Exit
		word  string
		badge themes.Badge
		ended bool
	}{
		{"reported", &client.Exit{Code: 0}, "REPORTED 0 (unconfirmed)", themes.BadgeUnconfirmed, true},
		{"reported", &client.Exit{Code: 3}, "REPORTED 3 (unconfirmed)", themes.BadgeUnconfirmed, true},
		{"ended", nil, "ENDED exit code unknown", themes.BadgeUnconfirmed, true},
		{"interrupted", nil, "INTERRUPTED", themes.BadgeUnconfirmed, false},
		{"lost", nil, "LOST", themes.BadgeLost, true},
	} {
		b, w, ended := State(c.state, c.exit, nil)
		if w != c.word || b != c.badge || ended != c.ended {
			t.Errorf("%s: %q badge %v ended %v, want %q %v %v", c.state, w, b, ended, c.word, c.badge, c.ended)
		}
		if b == themes.BadgeExited || b == themes.BadgeRunning {
			t.Errorf("%s: shown with the success badge", c.state)
		}
	}
}
