package common

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/themes"
)

func TestProcessBadgeNeverCallsUnconfirmedSuccess(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	seen := now.Add(-4 * time.Second)
	cases := []struct {
		state string
		exit  *client.Exit
		rerr  *client.RunError
		cond  Condition
		badge themes.Badge
		label string
	}{
		{"running", nil, nil, Current, themes.BadgeRunning, "RUNNING"},
		{"exited", &client.Exit{Code: 0}, nil, Current, themes.BadgeExited, "EXITED 0"},
		{"exited", &client.Exit{Code: 7}, nil, Current, themes.BadgeExitedFail, "EXITED 7"},
		{"exited", &client.Exit{Code: 137, Signal: 9}, nil, Current, themes.BadgeKilled, "KILLED KILL"},
		{"exited", &client.Exit{Code: 143, TimedOut: true}, nil, Current, themes.BadgeTimedOut, "TIMED OUT"},
		{"error", nil, &client.RunError{Code: "enoent\x1b[2J"}, Current, themes.BadgeError, "ERROR enoent"},
		{"running", nil, nil, Lost, themes.BadgeLost, "LOST"},
		{"exited", &client.Exit{}, nil, Stale, themes.BadgeStale, "STALE #1 · EXITED 0"},
		{"running", nil, nil, Stale, themes.BadgeStale, "STALE #1 · was RUNNING"},
		{"running", nil, nil, Unknown, themes.BadgeUnknown, "UNKNOWN (RUNNING 4s ago)"},
		{"exited", nil, nil, Current, themes.BadgeExited, "EXITED ?"},
		{"weird", nil, nil, Current, themes.BadgeUnknown, "UNKNOWN"},
	}
	for _, c := range cases {
		b, l := ProcessBadge(c.state, c.exit, c.rerr, c.cond, 1, seen, now)
		if b != c.badge || l != c.label {
			t.Errorf("%s %+v %v: got %v %q, want %v %q", c.state, c.exit, c.cond, b, l, c.badge, c.label)
		}
	}
}

// Age reads as the fmt formats it was first written with, second by second up to three days and
// beyond.
func TestAgeMatchesItsFormats(t *testing.T) {
	old := func(d time.Duration) string {
		switch {
		case d < time.Minute:
			return fmt.Sprintf("%ds", int(d/time.Second))
		case d < time.Hour:
			return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
		case d < 48*time.Hour:
			return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
		}
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
	check := func(d time.Duration) {
		if got, want := Age(d), old(d); got != want {
			t.Fatalf("Age(%v) = %q, want %q", d, got, want)
		}
	}
	for d := time.Duration(0); d < 72*time.Hour; d += time.Second {
		check(d)
		check(d + 999*time.Millisecond)
	}
	for _, d := range []time.Duration{1<<63 - 1, 400 * 24 * time.Hour, 48*time.Hour - 1} {
		check(d)
	}
}

func TestFormatting(t *testing.T) {
	if got := ShortCursor("djEuTXpBMDEyMzQ1Njc4OelE0LjI"); got != "djEuTXpB…OelE0LjI" {
		t.Errorf("ShortCursor: %q", got)
	}
	for d, want := range map[time.Duration]string{4 * time.Second: "4s", 125 * time.Second: "2m05s", 3*time.Hour + 4*time.Minute: "3h04m", 72 * time.Hour: "3d", -time.Second: "0s"} {
		if got := Age(d); got != want {
			t.Errorf("Age(%v) = %q, want %q", d, got, want)
		}
	}
	if got := Argv([]string{"sh", "-c", "echo 'hi' \x1b]0;x\x07"}); strings.Contains(got, "\x1b") || !strings.HasPrefix(got, "sh -c 'echo '\\''hi'\\''") {
		t.Errorf("Argv: %q", got)
	}
	if got := Fit("abcdef", 4); got != "abc…" {
		t.Errorf("Fit cut: %q", got)
	}
	if got := Fit("ab", 4); got != "ab  " {
		t.Errorf("Fit pad: %q", got)
	}
}

func TestOverlayKeepsSize(t *testing.T) {
	bg := strings.Repeat(strings.Repeat(".", 20)+"\n", 5) + strings.Repeat(".", 20)
	out := Overlay(bg, "XX\nYY", 20, 6)
	lines := strings.Split(out, "\n")
	if len(lines) != 6 || lines[2] != ".........XX........." || lines[3] != ".........YY........." {
		t.Fatalf("overlay:\n%s", out)
	}
}

func TestDisplayArgvShowsWhatWasAskedFor(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{LoginShellArgv, "bash -l"},
		{[]string{"sh", "-c", "exec sandscope demo agent --speed 1"}, "sandscope demo agent --speed 1"},
		{[]string{"sh", "-c", "exec make; rm -rf x"}, `sh -c 'exec make; rm -rf x'`},
		{[]string{"sh", "-c", "echo hi"}, `sh -c 'echo hi'`},
		{[]string{"npm", "test"}, "npm test"},
	} {
		if got := Argv(c.in); got != c.want {
			t.Errorf("Argv(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Describe adds each part of a message once: an error that already says the bridge is unreachable
// and names the operation is not wrapped again ("pool stats: bridge unreachable: pool stats: …").
func TestDescribeSaysItOnce(t *testing.T) {
	err := fmt.Errorf("pool stats: bridge unreachable: %w", &client.TransportError{Op: "pool stats", Err: errors.New("connection refused")})
	got := Describe("pool stats", err)
	if strings.Count(got, "pool stats") != strings.Count(err.Error(), "pool stats") || strings.Count(got, "unreachable") != strings.Count(err.Error(), "unreachable") {
		t.Fatalf("Describe repeats itself: %q (from %q)", got, err)
	}
}

// AgeChange is exactly when the text changes: compared with Age over a sweep of instants.
func TestAgeChangeMatchesAge(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	for _, d := range []time.Duration{-1500 * time.Millisecond, 0, 300 * time.Millisecond, 59 * time.Second,
		59*time.Minute + 59*time.Second + 700*time.Millisecond, 2*time.Hour + 30*time.Second, 47*time.Hour + 59*time.Minute + 59*time.Second, 50 * time.Hour} {
		now := t0.Add(d)
		next := AgeChange(now, t0)
		if !next.After(now) {
			t.Fatalf("d=%v: next %v not after now", d, next.Sub(t0))
		}
		shown := Age(now.Sub(t0))
		if got := Age(next.Sub(t0)); got == shown {
			t.Errorf("d=%v: at the change %v still reads %q", d, next.Sub(t0), got)
		}
		if got := Age(next.Add(-time.Nanosecond).Sub(t0)); got != shown {
			t.Errorf("d=%v: just before the change %v reads %q, want %q", d, next.Sub(t0), got, shown)
		}
	}
	var a Ages
	now := t0.Add(3 * time.Hour)
	a.Since(now, time.Time{}) // "never" never changes
	if !a.Next(now).IsZero() {
		t.Fatal("never has a next change")
	}
	a.Age(now, t0)                        // 3h00m: the next minute
	a.Since(now, now.Add(-2*time.Second)) // 2s: the next second
	if got := a.Next(now); !got.Equal(now.Add(time.Second)) {
		t.Fatalf("next %v", got.Sub(now))
	}
	a.Reset()
	if !a.Next(now).IsZero() {
		t.Fatal("reset kept ages")
	}
}
