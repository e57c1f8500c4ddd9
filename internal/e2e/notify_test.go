package e2e_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/internal/e2e"
)

// TestE2ENotifyWhileElsewhere runs the real binary in tmux with the bell and both desktop
// notifications enabled for endings, opens sandbox e2e, and lets a process in another sandbox end
// (its argv and its output carry escape sequences and BEL). The status area and the notification
// list show the ending; the bytes sandscope wrote to the terminal (tmux pipe-pane) hold exactly one
// OSC 9, one OSC 777 and one bell, with the hostile text cleaned inside them and nothing raw from
// the process anywhere; tmux saw the bell; Enter on the entry opens the process's log.
func TestE2ENotifyWhileElsewhere(t *testing.T) {
	tmuxPath := e2e.NeedTmux(t)
	b, c := e2e.Bridge(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.StartProcess(ctx, "other", client.ExecRequest{Argv: []string{"true"}}); err != nil {
		t.Fatalf("create sandbox other: %v", err)
	}
	dir := t.TempDir()
	env := e2e.Env(t, dir)
	cfg := "theme: dark\nnotify:\n  ended: [bell, osc9, osc777]\n  lost: bell\n"
	if err := os.WriteFile(filepath.Join(dir, "config", "sandscope", "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s := e2e.LaunchTUI(t, tmuxPath, dir, env, "--url", b.URL, "--token-file", e2e.TokenFile(t, b))
	raw := filepath.Join(dir, "pane.raw")
	s.PipePane(raw)
	s.WaitFor("the sandboxes screen", "Sandboxes (2)", "other", "e2e")
	s.Must("set-option", "-g", "monitor-bell", "on")
	s.OpenSandbox()

	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hostileArg := "evil\x1b]2;PWNED\x07\x07;x\x9b2J"
	p, err := c.StartProcess(ctx, "other", client.ExecRequest{Argv: []string{"sh", "-c",
		`sleep 2; printf 'out\033]2;PWNED\007\007\033]9;fake\007\033]777;notify;fake;fake\007\n'; exit 5`, hostileArg}})
	if err != nil {
		t.Fatal(err)
	}
	short := p.ID[:8]
	sc := s.WaitFor("the status area to tell of the ending", "EXITED 5 evil2PWNEDx2J-"+short+" · other/"+short)
	e2e.CheckHeader(t, sc)
	if !strings.Contains(sc, "Sandbox e2e") {
		t.Errorf("the sandbox screen is no longer open:\n%s", sc)
	}
	s.WaitUntil("tmux to see the bell", func(string) bool {
		return s.Display("#{window_bell_flag}") == "1"
	})

	// the bytes sandscope wrote: exactly the three signals, cleaned, and nothing raw besides
	var out []byte
	deadline := time.Now().Add(e2e.Wait)
	for bytes.Count(out, []byte{'\a'}) < 3 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		out, _ = os.ReadFile(raw)
	}
	// (the C1 CSI of the argument is not valid UTF-8 on its own: it arrives as U+FFFD)
	// the title leads with the outcome and the process's short name (its $0, letters kept)
	title := "EXITED 5 evil2PWNEDx2J-" + short
	osc9 := regexp.MustCompile("\x1b\\]9;sandscope: " + title + " — EXITED 5 · other/" + p.ID + " · sh -c sleep 2, printf [^\x00-\x1f\x7f;]*, exit 5 evil \\]2,PWNED ,x\uFFFD2J\a")
	osc777 := regexp.MustCompile("\x1b\\]777;notify;sandscope: " + title + ";EXITED 5 · other/" + p.ID + " · sh -c sleep 2, printf [^\x00-\x1f\x7f;]*, exit 5 evil \\]2,PWNED ,x\uFFFD2J\a")
	m9, m777 := osc9.FindAllIndex(out, -1), osc777.FindAllIndex(out, -1)
	if len(m9) != 1 || len(m777) != 1 {
		t.Fatalf("want one OSC 9 and one OSC 777 notification, got %d and %d in %q", len(m9), len(m777), visibleControls(out))
	}
	rest := append(append(append([]byte(nil), out[:m9[0][0]]...), out[m9[0][1]:m777[0][0]]...), out[m777[0][1]:]...)
	if n := bytes.Count(rest, []byte{'\a'}); n != 1 {
		t.Errorf("want exactly one bell besides the notifications, got %d", n)
	}
	for _, bad := range []string{"\x1b]2;", "\x1b]9;fake", "\x1b]777;notify;fake", "\x1b]52", "\xc2\x9b"} {
		if bytes.Contains(out, []byte(bad)) {
			t.Errorf("the terminal received %q", bad)
		}
	}
	if bytes.Contains(rest, []byte("\x1b]")) {
		t.Errorf("an OSC sequence besides the notifications reached the terminal: %q", visibleControls(rest))
	}

	// the notification list, opened from the sandbox screen, and Enter into the log
	s.Keys("M")
	sc = s.WaitFor("the notification list", "Notifications (1)", title+" · other/"+short)
	e2e.CheckHeader(t, sc)
	s.Keys("Enter")
	s.WaitFor("the process's log", "Logs · other", "out")
}

// visibleControls shows control bytes of b for an error message.
func visibleControls(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			sb.WriteString("^" + string(rune(c+'@'&0x7f)))
			continue
		}
		sb.WriteByte(c)
	}
	return sb.String()
}
