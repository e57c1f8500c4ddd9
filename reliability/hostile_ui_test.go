package reliability

// Hostile bytes on screen: a process and a terminal whose output, argv and terminal title carry
// every escape family a prompt-injected agent could print are shown through the real UI components
// (log view, sandbox screen, sandboxes list, terminal pane) over the real client and local bridge,
// and the rendered View() must hold nothing a terminal would act on.

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/keymap"
	"sandscope/sanitize"
	"sandscope/themes"
	"sandscope/ui/common"
	"sandscope/ui/logview"
	"sandscope/ui/sandbox"
	"sandscope/ui/sandboxes"
	"sandscope/ui/termpane"
)

// hostileSet names each attack; the marker text around them proves the line was rendered.
var hostileSet = []struct{ name, seq string }{
	{"OSC 52 clipboard write (BEL)", "\x1b]52;c;cm0gLXJmIH4K\x07"},
	{"OSC 52 clipboard write (ST)", "\x1b]52;p;ZXZpbA==\x1b\\"},
	{"OSC 52 clipboard query", "\x1b]52;c;?\x07"},
	{"OSC 0 title", "\x1b]0;PWNED-TITLE\x07"},
	{"OSC 2 title", "\x1b]2;PWNED-TITLE\x1b\\"},
	{"OSC 8 hyperlink", "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"},
	{"OSC 1337 (iTerm file)", "\x1b]1337;File=inline=1:AAAA\x07"},
	{"DCS DECRQSS query", "\x1bP$qm\x1b\\"},
	{"DCS sixel", "\x1bPq#0;2;0;0;0~~\x1b\\"},
	{"APC", "\x1b_Gf=100;AAAA\x1b\\"},
	{"PM", "\x1b^private\x1b\\"},
	{"SOS", "\x1bXstring\x1b\\"},
	{"CSI clear screen", "\x1b[2J"},
	{"CSI cursor home", "\x1b[H"},
	{"CSI cursor up", "\x1b[5A"},
	{"CSI save/restore cursor", "\x1b[s\x1b[u\x1b7\x1b8"},
	{"CSI device attributes query", "\x1b[c\x1b[>c"},
	{"CSI cursor position query", "\x1b[6n"},
	{"CSI window title report query", "\x1b[21t"},
	{"CSI alternate screen", "\x1b[?1049h"},
	{"CSI mouse tracking", "\x1b[?1000h"},
	{"CSI bracketed paste off", "\x1b[?2004l"},
	{"CSI scroll region", "\x1b[1;3r"},
	{"ESC charset switch", "\x1b(0\x1b)0\x0e"},
	{"ESC RIS reset", "\x1bc"},
	{"C1 CSI (8-bit)", "\x9b2J"},
	{"C1 OSC (8-bit)", "\x9d0;PWNED\x9c"},
	{"C1 CSI as UTF-8", "\u009b2J"},
	{"C1 NEL/IND/RI", "\x85\x84\x8d"},
	{"BEL", "\x07"},
	{"backspace overwrite", "abc\b\b\b"},
	{"carriage return overwrite", "innocent\rEVIL"},
	{"DEL", "\x7f"},
	{"bidi override", "\u202eevil\u202c\u2066x\u2069"},
	{"invalid UTF-8", "\xff\xfe\xc3\x28\xe2\x82"},
	{"NUL", "\x00"},
	{"unterminated OSC", "\x1b]0;never-ends"},
}

func hostileOutput() string {
	var b strings.Builder
	for i, h := range hostileSet {
		b.WriteString("VISIBLE-MARKER ")
		b.WriteString(h.seq)
		b.WriteString(" end")
		if i%3 == 2 {
			b.WriteString("\r\n")
		} else {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// screenSafe describes the first thing in s a terminal would act on ("" when none): with the ASCII
// colour profile nothing but printable text, spaces and newlines may remain.
func screenSafe(s string) string {
	if !utf8.ValidString(s) {
		return "invalid UTF-8"
	}
	for i, r := range s {
		switch {
		case r == '\n':
		case r < 0x20 || r == 0x7f:
			return describeAt(s, i, "C0 control")
		case r >= 0x80 && r <= 0x9f:
			return describeAt(s, i, "C1 control")
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return describeAt(s, i, "bidi control")
		}
	}
	return ""
}

func describeAt(s string, i int, what string) string {
	lo, hi := max(0, i-20), min(len(s), i+20)
	return what + " near " + strings.ReplaceAll(strings.ToValidUTF8(s[lo:hi], "?"), "\x1b", "<ESC>")
}

// pump runs cmd and the commands its messages produce, delivering every message to update on this
// goroutine, for window.
func pump(update func(tea.Msg) tea.Cmd, cmd tea.Cmd, window time.Duration) {
	msgs := make(chan tea.Msg, 1024)
	done := make(chan struct{})
	defer close(done)
	var run func(tea.Cmd)
	run = func(c tea.Cmd) {
		if c == nil {
			return
		}
		go func() {
			m := c()
			if b, ok := m.(tea.BatchMsg); ok {
				for _, sub := range b {
					run(sub)
				}
				return
			}
			if m == nil {
				return
			}
			select {
			case msgs <- m:
			case <-done:
			}
		}()
	}
	run(cmd)
	deadline := time.After(window)
	for {
		select {
		case m := <-msgs:
			run(update(m))
		case <-deadline:
			return
		}
	}
}

func TestHostileBytesOnScreen(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.direct.WriteFile(ctx, e.sb, "hostile", []byte(hostileOutput())); err != nil {
		t.Fatal(err)
	}
	if err := e.direct.WriteFile(ctx, e.sb, "p.sh", []byte("cat hostile; sleep 15\n")); err != nil {
		t.Fatal(err)
	}
	if err := e.direct.WriteFile(ctx, e.sb, "t.sh", []byte("cat hostile; printf '\\033]0;TITLE-MARKER\\033[2J\\302\\233\\007'; sleep 15\n")); err != nil {
		t.Fatal(err)
	}
	hostileArg := "ARGV-MARKER\x1b]0;PWNED\x07\x1b[2J\x9b31m\u202e\x1b]52;c;ZXZpbA==\x07"
	p, err := e.direct.StartProcess(ctx, e.sb, client.ExecRequest{Argv: []string{"sh", "p.sh", hostileArg}})
	if err != nil {
		t.Fatal(err)
	}
	term, err := e.direct.CreateTerminal(ctx, e.sb, client.TerminalRequest{
		Argv: []string{"sh", "t.sh", hostileArg}, Cwd: "/workspace"})
	if err != nil {
		t.Fatal(err)
	}
	pal, err := themes.Builtin("dark")
	if err != nil {
		t.Fatal(err)
	}
	caps, err := e.c.Capabilities(ctx) // the hostile bridge's own document: its list included
	if err != nil {
		t.Fatal(err)
	}
	uctx := &common.Context{
		Width: 120, Height: 40, Styles: themes.New(pal, themes.AsciiRenderer()), Keys: keymap.New(),
		Driver: driver.NewPreview(e.c, caps), BridgeLabel: e.c.BaseURL(), BridgeURL: e.c.BaseURL(), Local: true,
		StateDir: t.TempDir(), CacheDir: t.TempDir(), Ctx: ctx,
		WatchFast: 100 * time.Millisecond, WatchSlow: 200 * time.Millisecond,
	}

	check := func(name, view string, markers ...string) {
		t.Helper()
		if d := screenSafe(view); d != "" {
			t.Errorf("%s: unsafe screen: %s", name, d)
		}
		for _, m := range markers {
			if !strings.Contains(view, m) {
				t.Errorf("%s: %q not rendered (the hostile input never reached the screen):\n%s", name, m, view)
			}
		}
	}

	// Log view.
	lv := logview.New(uctx, []common.LogTarget{{Sandbox: e.sb, Process: p, Incarnation: 1}}, logview.Options{QuietAfter: time.Second})
	lv.SetSize(120, 40)
	pump(func(m tea.Msg) tea.Cmd { _, c := lv.Update(m); return c }, lv.Init(), time.Second)
	check("log view", lv.View(), "VISIBLE-MARKER")
	lv.Close()

	// Sandbox screen: process and terminal lists with the hostile argv.
	sv := sandbox.New(uctx, e.sb)
	sv.SetSize(120, 40)
	pump(func(m tea.Msg) tea.Cmd { _, c := sv.Update(m); return c }, sv.Init(), time.Second)
	check("sandbox screen", sv.View(), "ARGV-MARKER")
	sv.Close()

	// Sandboxes list.
	sl := sandboxes.New(uctx)
	sl.SetSize(120, 40)
	pump(func(m tea.Msg) tea.Cmd { _, c := sl.Update(m); return c }, sl.Init(), time.Second)
	check("sandboxes list", sl.View(), e.sb)

	// Terminal pane: header (command, title) and the emulator's screen. The emulator executes
	// screen-control sequences (clearing the screen is a terminal's job), so only safety and the
	// header's command and title are checked.
	tc, err := e.c.ConnectTerminal(ctx, e.sb, term.ID, client.ConnectOptions{Cols: 100, Rows: 30})
	if err != nil {
		t.Fatal(err)
	}
	tp := termpane.New(tc, 120, 32, termpane.Options{TerminalID: term.ID, Command: term.Command, Context: uctx, Plain: true})
	pump(func(m tea.Msg) tea.Cmd { _, c := tp.Update(m); return c }, tp.Init(), 1500*time.Millisecond)
	check("terminal pane", tp.View(), "ARGV-MARKER", "TITLE-MARKER")
	tp.Close()
	_ = tc.Close()
	_ = e.direct.KillProcess(ctx, e.sb, p.ID, 9)
	_ = e.direct.TerminateTerminal(ctx, e.sb, term.ID)
}

// TestHostileBytesSanitiser checks the sanitiser itself with each attack alone, split across chunks
// at every byte boundary (a sequence cut between two reads must not slip through), for lines
// (Stream), one-line text (Text) and headers (Title).
func TestHostileBytesSanitiser(t *testing.T) {
	t.Parallel()
	for _, h := range hostileSet {
		in := "A" + h.seq + "Z"
		for _, o := range []sanitize.Options{{}, {StripSGR: true}, {ShowEscapes: true}, {MaxRunes: 5}} {
			out, _ := sanitize.Text([]byte(in), o)
			if d := sgrOnlySafe(out); d != "" {
				t.Errorf("%s: Text(%+v): %s", h.name, o, d)
			}
		}
		if d := screenSafe(sanitize.Title(in)); d != "" {
			t.Errorf("%s: Title: %s", h.name, d)
		}
		if strings.Contains(sanitize.Title(in), "\x1b") {
			t.Errorf("%s: Title kept an ESC", h.name)
		}
		for cut := 0; cut <= len(in); cut++ {
			s := sanitize.NewStream(sanitize.Options{})
			lines := s.Feed(nil, []byte(in[:cut]))
			lines = s.Feed(lines, []byte(in[cut:]))
			if l, ok := s.Flush(); ok {
				lines = append(lines, l)
			}
			for _, l := range lines {
				if d := sgrOnlySafe(l.Text); d != "" {
					t.Errorf("%s split at %d: %s", h.name, cut, d)
				}
			}
		}
	}
}

// sgrOnlySafe is screenSafe allowing complete SGR sequences (ESC [ digits ; : m).
func sgrOnlySafe(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			j := i + 1
			if j < len(s) && s[j] == '[' {
				j++
				for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ';' || s[j] == ':') {
					j++
				}
				if j < len(s) && s[j] == 'm' {
					i = j
					continue
				}
			}
			return describeAt(s, i, "non-SGR escape")
		}
		b.WriteByte(s[i])
	}
	return screenSafe(b.String())
}
