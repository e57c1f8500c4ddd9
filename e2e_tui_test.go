package main

// End-to-end tests of the TUI: the real sandscope binary in tmux, pointed at a local bridge the
// test controls (--url and --token-file), driven with send-keys and read back with capture-pane the
// way a person would look at it. The test replaces the sandbox's container "from another client"
// (the bridge's own ReplaceSandbox) while the TUI watches.
//
// Every wait is a poll with a generous deadline (a guard against hangs on a loaded machine, never a
// timing assertion). Without tmux the tests skip, or fail when CI is set.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/localbridge/bridgetest"
)

// tuiWait bounds each wait for the screen.
const tuiWait = 90 * time.Second

// tuiSession is one tmux server (private socket) running sandscope in a 160×48 window.
type tuiSession struct {
	t      *testing.T
	bin    string
	tmux   string
	socket string
	env    []string
	pid    int    // the pane's process: sandscope itself
	target string // the tmux session the keys go to ("tui" unless set)
}

// session is the tmux target the session's commands address.
func (s *tuiSession) session() string {
	if s.target == "" {
		return "tui"
	}
	return s.target
}

// needTmux finds tmux: without it the test skips, or fails under CI.
func needTmux(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and drives it in tmux")
	}
	tmuxPath, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("tmux is required under CI: %v", err)
		}
		t.Skip("tmux not installed")
	}
	return tmuxPath
}

// tuiEnv is the caller's environment without bridge, XDG and tmux settings, plus private state,
// cache and config directories under dir.
func tuiEnv(t *testing.T, dir string) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "SANDSCOPE_") || strings.HasPrefix(name, "XDG_") ||
			name == "SANDBOX_API_KEY" || name == "TMUX" || name == "TMUX_PANE" || name == "NO_COLOR" {
			continue
		}
		env = append(env, kv)
	}
	for _, sub := range []string{"state", "cache", "config/sandscope"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return append(env,
		"XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"XDG_CACHE_HOME="+filepath.Join(dir, "cache"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
	)
}

// tokenFile writes a bridge's token to a private file (the token never goes into argv).
func tokenFile(t *testing.T, b *bridgetest.Bridge) string {
	t.Helper()
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte(b.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return tok
}

// launchTUI starts sandscope with args in a new tmux server (socket under dir).
func launchTUI(t *testing.T, tmuxPath, dir string, env []string, args ...string) *tuiSession {
	t.Helper()
	s := &tuiSession{t: t, bin: sandscopeBinary(t), tmux: tmuxPath, socket: filepath.Join(dir, "tmux.sock"), env: env}
	t.Cleanup(s.stop)
	s.must("-f", "/dev/null", "new-session", "-d", "-s", "tui", "-x", "160", "-y", "48", s.launch(args...))
	// OSC 52 from programs would create tmux paste buffers (the default only forwards them)
	s.must("set-option", "-g", "set-clipboard", "on")
	s.must("set-option", "-g", "allow-rename", "on")
	// the pane stays after sandscope ends, so a relaunch can reuse it
	s.must("set-option", "-g", "remain-on-exit", "on")
	s.readPID()
	return s
}

func (s *tuiSession) launch(args ...string) string {
	cmd := "exec " + strconv.Quote(s.bin)
	for _, a := range args {
		cmd += " " + strconv.Quote(a)
	}
	return cmd
}

func (s *tuiSession) readPID() {
	s.t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(s.must("display-message", "-p", "-t", s.session(), "#{pane_pid}")))
	if err != nil {
		s.t.Fatalf("pane pid: %v", err)
	}
	s.pid = pid
}

// relaunch runs sandscope again in the same pane, once the previous one ended.
func (s *tuiSession) relaunch(args ...string) {
	s.t.Helper()
	s.must("respawn-pane", "-k", "-t", s.session(), s.launch(args...))
	s.readPID()
}

// startTUI starts a bridge and sandscope on it in tmux. The sandbox "e2e" exists beforehand (a
// process ran in it), so the sandboxes list shows it.
func startTUI(t *testing.T) (*tuiSession, *bridgetest.Bridge, *client.Client) {
	t.Helper()
	tmuxPath := needTmux(t)
	b, c := e2eBridge(t)
	dir := t.TempDir()
	s := launchTUI(t, tmuxPath, dir, tuiEnv(t, dir), "--url", b.URL, "--token-file", tokenFile(t, b))
	s.waitFor("the sandboxes screen", "sandscope │", "Sandboxes (1)", "e2e")
	return s, b, c
}

// e2eBridge starts a bridge holding sandbox "e2e".
func e2eBridge(t *testing.T) (*bridgetest.Bridge, *client.Client) {
	t.Helper()
	b := bridgetest.Start(t)
	c, err := client.New(b.URL, client.WithToken(b.Token))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.StartProcess(ctx, "e2e", client.ExecRequest{Argv: []string{"true"}}); err != nil {
		t.Fatalf("create sandbox e2e: %v", err)
	}
	return b, c
}

func (s *tuiSession) run(args ...string) (string, error) {
	cmd := exec.Command(s.tmux, append([]string{"-S", s.socket}, args...)...)
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (s *tuiSession) must(args ...string) string {
	s.t.Helper()
	out, err := s.run(args...)
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

// keys sends tmux key names (Enter, Escape, C-]) or words.
func (s *tuiSession) keys(keys ...string) {
	s.t.Helper()
	s.must(append([]string{"send-keys", "-t", s.session()}, keys...)...)
}

// typeText sends text literally.
func (s *tuiSession) typeText(text string) {
	s.t.Helper()
	s.must("send-keys", "-t", s.session(), "-l", text)
}

func (s *tuiSession) screen() string {
	s.t.Helper()
	return s.must("capture-pane", "-p", "-t", s.session())
}

// waitFor polls the screen until it shows every want.
func (s *tuiSession) waitFor(what string, wants ...string) string {
	s.t.Helper()
	return s.waitUntil(what, func(sc string) bool {
		for _, w := range wants {
			if !strings.Contains(sc, w) {
				return false
			}
		}
		return true
	})
}

func (s *tuiSession) waitUntil(what string, ok func(string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(tuiWait)
	for {
		sc := s.screen()
		if ok(sc) {
			return sc
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("waiting for %s; the screen shows:\n%s", what, sc)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// stop kills the tmux server and makes sure sandscope is gone.
func (s *tuiSession) stop() {
	_, _ = s.run("kill-server")
	if s.pid <= 0 {
		return
	}
	deadline := time.Now().Add(20 * time.Second)
	for alive(s.pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(s.pid, syscall.SIGKILL)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie waiting for its parent to reap it does not count).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// the state follows the command name in parentheses
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z' && stat[i+2] != 'X'
	}
	return true
}

// lines splits a screen into its rows.
func lines(sc string) []string { return strings.Split(strings.TrimRight(sc, "\n"), "\n") }

// checkFrame checks that the header is on the first row and the key hints on the last: nothing
// the processes printed moved or wiped sandscope's own frame.
func (s *tuiSession) checkFrame(sc string) {
	s.t.Helper()
	ls := strings.Split(sc, "\n")
	if len(ls) < 48 || !strings.HasPrefix(ls[0], " sandscope │") {
		s.t.Errorf("the header is not on the first row:\n%s", sc)
	}
	if h := ls[47]; !strings.Contains(h, "? toggle help") && !strings.Contains(h, "esc back") && !strings.Contains(h, "leave terminal") {
		s.t.Errorf("the key hints are not on the last row (%q):\n%s", ls[47], sc)
	}
}

// openSandbox opens sandbox e2e from the sandboxes screen.
func (s *tuiSession) openSandbox() {
	s.t.Helper()
	s.keys("Enter")
	s.waitFor("the sandbox screen", "Sandbox e2e", "Processes (")
}

// execInTUI runs argv through the exec prompt and opens its log.
func (s *tuiSession) execInTUI(command string) {
	s.t.Helper()
	s.keys("e")
	s.waitFor("the exec prompt", "Run a process in e2e")
	s.typeText(command)
	s.keys("Enter")
	s.waitFor("the process started", "started ")
	s.keys("Enter")
	s.waitFor("the log view", "Logs · e2e")
}

var numbered = regexp.MustCompile(`\bn=(\d+)\b`)

// TestE2ETUILogLostMidStream follows a process in the log view, replaces the container under it,
// and checks that the screen says LOST (log, process list, incarnation timeline) and that what the
// log shows is exactly what the process printed, in order, once, with nothing after the marker.
func TestE2ETUILogLostMidStream(t *testing.T) {
	s, b, _ := startTUI(t)
	out := filepath.Join(t.TempDir(), "printed")
	s.openSandbox()
	// each line goes to stdout and, as a witness of what was really printed, to a file
	s.execInTUI(fmt.Sprintf(`sh -c 'i=0; while [ $i -lt 600 ]; do i=$((i+1)); echo "n=$i"; echo "n=$i" >> %s; sleep 0.1; done'`, out))
	s.waitFor("live numbered lines, more than a page of them", "n=60", "LIVE")

	if err := b.Server.ReplaceSandbox("e2e"); err != nil {
		t.Fatal(err)
	}
	sc := s.waitFor("the loss in the log view", "LOST")
	s.checkFrame(sc)
	// the printed witness stops growing once the process is gone with its container
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	printed := map[int]bool{}
	maxPrinted := 0
	for _, m := range numbered.FindAllStringSubmatch(string(data), -1) {
		n, _ := strconv.Atoi(m[1])
		printed[n] = true
		maxPrinted = max(maxPrinted, n)
	}
	if maxPrinted == 0 || maxPrinted >= 600 {
		t.Fatalf("the process printed up to n=%d; want it cut by the replacement", maxPrinted)
	}

	// Scroll to the top, then read the whole log page by page: every numbered line the process
	// printed, in order, once; the loss marker after the last of them.
	s.keys("g")
	s.waitUntil("the log scrolled to the top", func(sc string) bool { return strings.Contains(sc, "n=1\n") || strings.Contains(sc, "n=1 ") })
	var shown []int
	marker := -1
	seenRows := map[string]bool{}
	for page := 0; page < 100; page++ {
		sc := s.screen()
		rows := lines(sc)
		for _, r := range rows[2 : len(rows)-4] { // header and title; status, mode and hint rows
			key := strings.TrimSpace(r)
			if key == "" {
				continue
			}
			if m := numbered.FindStringSubmatch(r); m != nil && !strings.Contains(r, "LOST") {
				if seenRows[key] {
					continue // a row seen on the previous page (pages overlap at their edges)
				}
				seenRows[key] = true
				n, _ := strconv.Atoi(m[1])
				shown = append(shown, n)
				continue
			}
			if strings.Contains(r, "LOST") && marker < 0 {
				marker = len(shown)
			}
		}
		if marker >= 0 {
			break
		}
		s.keys("PageDown")
		time.Sleep(200 * time.Millisecond)
	}
	if marker < 0 {
		t.Fatalf("no LOST marker in the log; shown %v", shown)
	}
	if len(shown) == 0 {
		t.Fatal("no numbered lines shown")
	}
	for i, n := range shown {
		if !printed[n] {
			t.Errorf("the log shows n=%d, which the process never printed", n)
		}
		if n != i+1 {
			t.Fatalf("line %d of the log is n=%d: lines missing, repeated or out of order: %v", i, n, shown)
		}
	}
	if marker != len(shown) {
		t.Errorf("numbered lines after the LOST marker (marker after %d of %d lines)", marker, len(shown))
	}
	t.Logf("the log shows n=1…%d, then the LOST marker", len(shown))
	// the bottom of the log: nothing numbered below the marker
	s.keys("G")
	time.Sleep(300 * time.Millisecond)
	rows := lines(s.screen())
	after := false
	for _, r := range rows[2 : len(rows)-4] {
		if strings.Contains(r, "LOST") {
			after = true
		} else if after && numbered.MatchString(r) {
			t.Errorf("a numbered line below the LOST marker: %q", r)
		}
	}
	if !after {
		t.Errorf("the bottom of the log lacks the LOST marker:\n%s", strings.Join(rows, "\n"))
	}
	if len(shown) != maxPrinted {
		t.Logf("the log shows n=1…%d; the process printed up to n=%d before it was lost (the rest never reached the bridge's log)", len(shown), maxPrinted)
	}

	// The sandbox screen: the sandbox runs incarnation #2, the process stays listed with its
	// incarnation and last known state, and the timeline shows both incarnations.
	s.keys("Escape")
	// (LOST when the watcher saw it vanish, STALE #1 · was RUNNING when it saw the new
	// container first: both keep the process listed with what was last known)
	s.waitUntil("the lost process in the list", func(sc string) bool {
		return strings.Contains(sc, "Sandbox e2e") && strings.Contains(sc, "incarnation #2") &&
			(strings.Contains(sc, "LOST ") || strings.Contains(sc, "STALE #1 · was RUNNING"))
	})
	s.keys("Tab")
	s.keys("Tab")
	sc = s.waitFor("the incarnation timeline", "[Incarnations (2)]", "#1", "#2")
	s.checkFrame(sc)
}

// TestE2ETUIHostileOutput prints title, clipboard and cursor-movement sequences: tmux's pane title
// and paste buffers stay as they were, sandscope's frame stays in place, and the sequences show
// as visible text in the log.
func TestE2ETUIHostileOutput(t *testing.T) {
	s, _, _ := startTUI(t)
	title := strings.TrimSpace(s.must("display-message", "-p", "-t", "tui", "#{pane_title}"))
	buffers := s.must("list-buffers")
	s.openSandbox()
	s.execInTUI(`sh -c 'printf "start\033]2;PWNED\007mid\033]52;c;cHduZWQ=\007\033[2J\033[H\033[10;10H\033[?1049hend\n"; echo done-marker; sleep 600'`)
	// the title row quotes the command; the log rows start with what the process printed
	logRow := func(sc, prefix string) int {
		for i, r := range lines(sc) {
			if strings.HasPrefix(strings.TrimSpace(r), prefix) {
				return i
			}
		}
		return -1
	}
	sc := s.waitUntil("the hostile line in the log", func(sc string) bool {
		return logRow(sc, "start") > 0 && logRow(sc, "done-marker") > 0
	})
	s.checkFrame(sc)
	if got := strings.TrimSpace(s.must("display-message", "-p", "-t", "tui", "#{pane_title}")); got != title || strings.Contains(got, "PWNED") {
		t.Errorf("the pane title changed from %q to %q", title, got)
	}
	if got := s.must("list-buffers"); got != buffers {
		t.Errorf("tmux paste buffers changed: %q (was %q)", got, buffers)
	}
	// the sequences are removed or made visible: the text stays on the line it was printed on, in
	// order, at the log's left edge, and the next line follows it
	rows := lines(sc)
	at := logRow(sc, "start")
	if at < 0 || at+1 >= len(rows) {
		t.Fatalf("no hostile line:\n%s", sc)
	}
	line := rows[at]
	i, j, k := strings.Index(line, "start"), strings.Index(line, "mid"), strings.Index(line, "end")
	if !(i >= 0 && i < j && j < k) || strings.TrimSpace(line[:i]) != "" {
		t.Errorf("the hostile line was not kept in place and in order: %q", line)
	}
	if !strings.Contains(rows[at+1], "done-marker") {
		t.Errorf("the next line moved: %q after %q", rows[at+1], line)
	}
	// -e keeps colour sequences: anything else from the process (titles, clipboard, cursor
	// moves) must not reach tmux either
	raw := s.must("capture-pane", "-p", "-e", "-t", "tui")
	for _, bad := range []string{"\x1b]", "\x1b[2J", "\x1b[10;10H", "\x1b[?1049h", "\x07"} {
		if strings.Contains(raw, bad) {
			t.Errorf("the screen holds %q", bad)
		}
	}
	// the log's own status row stays above the mode and hint rows
	if st := rows[len(rows)-4]; !strings.Contains(st, "LIVE") && !strings.Contains(st, "QUIET") {
		t.Errorf("the log status row moved (%q):\n%s", st, sc)
	}
	// a frame later, still intact
	time.Sleep(500 * time.Millisecond)
	s.checkFrame(s.screen())
}

// TestE2ETUITerminalPaneAndAttach opens a terminal in the embedded pane, runs a command in it,
// leaves focus, attaches full screen and detaches back to the same screen, then replaces the
// container under the open pane: LOST.
func TestE2ETUITerminalPaneAndAttach(t *testing.T) {
	s, b, _ := startTUI(t)
	s.openSandbox()
	s.keys("s")
	s.waitFor("the new-terminal form", "New terminal in e2e", "Size")
	s.keys("Enter")
	s.waitFor("the focused pane", "▌term ", "LIVE", "focused (")
	s.typeText("echo hi-$((6*7))")
	s.keys("Enter")
	sc := s.waitFor("the command's output in the pane", "hi-42")
	s.checkFrame(sc)

	// The leave key gives the keyboard back: ? opens sandscope's help instead of typing.
	s.keys("C-]")
	s.waitUntil("focus left", func(sc string) bool { return !strings.Contains(sc, "focused (") })
	s.keys("?")
	s.waitFor("the help overlay over the pane", "Keys ·", "attach full screen")
	s.keys("Escape")
	s.waitUntil("the help closed", func(sc string) bool { return !strings.Contains(sc, "Keys ·") })

	// Full-screen attach and back.
	s.keys("A")
	s.waitUntil("the full-screen attachment", func(sc string) bool { return !strings.Contains(sc, "sandscope │") })
	s.typeText("echo att-$((5*5))")
	s.keys("Enter")
	s.waitFor("the command's output attached", "att-25")
	s.keys("C-]")
	sc = s.waitFor("back in the TUI on the same screen", "sandscope │", "› terminal", "▌term ", "detached from terminal")
	s.checkFrame(sc)

	// Interrupt reaches the terminal's program: its INT trap prints the (computed) proof.
	s.keys("Enter")
	s.waitFor("the pane focused again", "focused (")
	s.typeText(`sh -c 'trap "echo int-\$((2*4)); exit 0" INT; echo trap-set; while :; do sleep 1; done'`)
	s.keys("Enter")
	s.waitUntil("the trap set", func(sc string) bool {
		for _, r := range lines(sc) {
			if strings.TrimSpace(r) == "trap-set" {
				return true
			}
		}
		return false
	})
	s.keys("C-]")
	s.waitUntil("focus left", func(sc string) bool { return !strings.Contains(sc, "focused (") })
	s.keys("i")
	s.waitFor("the interrupt and the program's answer", "sent SIGINT to terminal", "int-8")

	// The container goes away under the open pane.
	if err := b.Server.ReplaceSandbox("e2e"); err != nil {
		t.Fatal(err)
	}
	sc = s.waitFor("the pane's terminal lost", "LOST")
	s.checkFrame(sc)
	s.keys("Escape")
	s.waitFor("the sandbox screen", "Sandbox e2e", "incarnation #2")

	// A new terminal in the new container, terminated from the pane: its ending shows.
	s.keys("s")
	s.waitFor("the new-terminal form", "New terminal in e2e")
	s.keys("Enter")
	s.waitFor("the focused pane", "▌term ", "LIVE", "focused (")
	s.keys("C-]")
	s.waitUntil("focus left", func(sc string) bool { return !strings.Contains(sc, "focused (") })
	s.keys("T")
	// (an interactive bash ignores SIGTERM, so the SIGKILL that follows ends it: KILLED 9)
	sc = s.waitUntil("the terminated terminal", func(sc string) bool {
		return strings.Contains(sc, "terminating terminal") && (strings.Contains(sc, "KILLED") || strings.Contains(sc, "EXITED"))
	})
	s.checkFrame(sc)
}

// TestE2ETUIQuitEndsProcess checks that q (confirmed while a watcher is attached) ends sandscope:
// nothing is left running.
func TestE2ETUIQuitEndsProcess(t *testing.T) {
	s, _, _ := startTUI(t)
	s.openSandbox()
	s.keys("q")
	s.waitFor("the quit confirmation", "Quit sandscope?")
	deadline := time.Now().Add(tuiWait)
	for alive(s.pid) {
		if time.Now().After(deadline) {
			t.Fatalf("sandscope still runs after q:\n%s", s.screen())
		}
		// the pane (and the tmux server) close with the program: capturing may fail then
		if sc, err := s.run("capture-pane", "-p", "-t", "tui"); err == nil && strings.Contains(sc, "Quit sandscope?") {
			_, _ = s.run("send-keys", "-t", "tui", "y")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestCommandLineHelp checks every visible subcommand shows examples, --version prints the
// version, and cobra's completion command answers.
func TestCommandLineHelp(t *testing.T) {
	g := &globalOptions{}
	root := newRootCmd(g)
	if root.Example == "" || root.Flags().Lookup("demo") == nil {
		t.Error("the root command lacks the TUI's examples or --demo")
	}
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		if !strings.Contains(c.Example, "sandscope "+c.Name()) {
			t.Errorf("%s: no example invoking it: %q", c.Name(), c.Example)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		r := newRootCmd(&globalOptions{})
		var out strings.Builder
		r.SetOut(&out)
		r.SetErr(&out)
		r.SetArgs(args)
		if err := r.Execute(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out.String())
		}
		return out.String()
	}
	if got := run("--version"); !strings.Contains(got, version) {
		t.Errorf("--version printed %q", got)
	}
	if got := run("completion", "bash"); !strings.Contains(got, "bash completion") || !strings.Contains(got, "__start_sandscope") {
		t.Errorf("completion bash printed %.200q", got)
	}
}

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

// TestE2ETUIFirstRunDeclinedAndContexts opens the TUI as `go run .` does (embedded bridge, fresh
// state): the demo is offered, n declines it for good; C switches to a context from the config
// file (another bridge) and back to the embedded one; a second run does not offer the demo again.
func TestE2ETUIFirstRunDeclinedAndContexts(t *testing.T) {
	tmuxPath := needTmux(t)
	b, _ := e2eBridge(t)
	dir := t.TempDir()
	env := tuiEnv(t, dir)
	cfg := fmt.Sprintf("contexts:\n  - name: other\n    url: %s\n    tokenFile: %s\n", b.URL, tokenFile(t, b))
	if err := os.WriteFile(filepath.Join(dir, "config", "sandscope", "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s := launchTUI(t, tmuxPath, dir, env)
	s.waitFor("the first-run offer", "(embedded)", "Welcome to sandscope", "Start the demo scene?")
	s.keys("n")
	sc := s.waitUntil("the offer gone", func(sc string) bool { return !strings.Contains(sc, "Welcome to sandscope") })
	if !strings.Contains(sc, "Sandboxes (0)") {
		t.Fatalf("n started something:\n%s", sc)
	}

	s.keys("C")
	s.waitFor("the context picker", "Switch context", "other", "local (embedded) (current)")
	s.keys("Up")
	s.keys("Enter")
	sc = s.waitFor("the other bridge", "context other", "switched to context other", "Sandboxes (1)", "e2e")
	if strings.Contains(sc, "(embedded)") {
		t.Errorf("the header still names the embedded bridge:\n%s", sc)
	}
	s.checkFrame(sc)
	s.keys("C")
	s.waitFor("the context picker", "Switch context", "other (current)")
	s.keys("Down")
	s.keys("Enter")
	s.waitFor("the embedded bridge again", "(embedded)", "Sandboxes (0)")

	s.keys("q")
	deadline := time.Now().Add(tuiWait)
	for alive(s.pid) {
		if time.Now().After(deadline) {
			t.Fatalf("sandscope did not quit:\n%s", s.screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.relaunch()
	sc = s.waitFor("the second run", "(embedded)", "Sandboxes (")
	if strings.Contains(sc, "Welcome to sandscope") {
		t.Errorf("the demo was offered again after n:\n%s", sc)
	}
}
