package e2e_test

// End-to-end: the real sandscope binary in tmux, attached to terminals of a real local bridge,
// driven with send-keys and read with capture-pane, as a person would use it.

import (
	"bytes"
	"context"
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
	"sandscope/internal/e2e"
	"sandscope/localbridge/bridgetest"
)

var attachSizeRE = regexp.MustCompile(`rows \d+; columns \d+;`)

// attachChildPID is the one child process of pid (the sandscope the pane's shell is running).
func attachChildPID(t *testing.T, pid string) int {
	t.Helper()
	for i := 0; i < 100; i++ {
		b, _ := os.ReadFile("/proc/" + pid + "/task/" + pid + "/children")
		if f := strings.Fields(string(b)); len(f) == 1 {
			n, err := strconv.Atoi(f[0])
			if err == nil {
				return n
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no single child of %s", pid)
	return 0
}

func TestE2EShellAttachInTmux(t *testing.T) {
	tmux := e2e.NeedTmux(t)
	pager := "less"
	if _, err := exec.LookPath("less"); err != nil {
		pager = "vi"
	}
	bin := e2e.Binary(t)
	b := bridgetest.Start(t)
	dir := t.TempDir()
	tok := e2e.TokenFile(t, b)
	c, _ := client.New(b.URL, client.WithToken(b.Token))
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}

	s := e2e.NewSession(t, tmux, dir, "e2e", nil)
	s.Wait, s.Poll, s.History = 45*time.Second, 50*time.Millisecond, 200
	s.Start(120, 40, "env", "-i", "PATH="+os.Getenv("PATH"), "HOME="+dir, "TERM=xterm-256color", "PS1=local$ ", "/bin/sh")
	// waitFor polls the pane (and its scrollback) until it shows want.
	waitFor := func(want string) string {
		t.Helper()
		return s.WaitFor(strconv.Quote(want), want)
	}
	waitFor("local$")

	sscope := fmt.Sprintf("%s --url %s --token-file %s", bin, b.URL, tok)
	before := filepath.Join(dir, "stty.before")
	s.Line("stty -a > " + before + "; echo MARK$((1+1))")
	waitFor("MARK2")

	sttyUnchanged := func(step string) {
		t.Helper()
		after := filepath.Join(dir, "stty."+step)
		s.Line(fmt.Sprintf("stty -a > %s; echo STTY$((40+2))%s", after, step))
		waitFor("STTY42" + step)
		a, _ := os.ReadFile(before)
		bb, _ := os.ReadFile(after)
		// The window was resized on purpose; every mode and control character must match.
		a, bb = attachSizeRE.ReplaceAll(a, nil), attachSizeRE.ReplaceAll(bb, nil)
		if len(a) == 0 || !bytes.Equal(a, bb) {
			t.Fatalf("terminal modes changed after %s:\nbefore:\n%s\nafter:\n%s", step, a, bb)
		}
	}

	// 1. shell: output, resize, a full-screen program, detach.
	s.Line(sscope + " shell " + sb + " -- env 'PS1=remote'1'$ ' /bin/sh") // typed: remote'1', shown: remote1
	waitFor("remote1$")
	s.Line("echo hi$((2+3))")
	waitFor("hi5")
	s.Resize(100, 30)
	s.Line("stty size; echo SIZE$((1+1))")
	if got := waitFor("SIZE2"); !strings.Contains(got, "30 100") {
		t.Fatalf("stty size after resize-window:\n%s", got)
	}
	if pager == "less" {
		s.Line("seq 1 500 | less")
		waitFor("\n29\n")
		s.Keys("q")
	} else {
		s.Line("vi")
		time.Sleep(300 * time.Millisecond)
		s.Keys("Escape", ":q!", "Enter")
	}
	s.Line("echo back$((3+4))")
	waitFor("back7")
	if alt := s.Display("#{alternate_on}"); alt != "0" {
		t.Fatalf("still on the alternate screen after quitting %s", pager)
	}
	s.Keys("C-]")
	waitFor("sandscope: detached")
	s.Line("echo status=$?")
	waitFor("status=0")
	sttyUnchanged("detach")

	// 2. attach to the same terminal, exit 5 remotely.
	terms, err := c.ListTerminals(ctx, sb)
	if err != nil || len(terms) != 1 {
		t.Fatalf("terminals: %v %+v", err, terms)
	}
	s.Clear()
	s.Line(sscope + " attach " + sb + " " + terms[0].ID)
	waitFor("hi5") // replayed output
	s.Line("echo again$((4+4))")
	waitFor("again8")
	s.Line("exit 5")
	waitFor("ended: EXITED 5")
	s.Line("echo status=$?")
	waitFor("status=5")
	sttyUnchanged("exit")

	// 3. a prefix detach key passes the prefix through when doubled, then detaches.
	s.Clear()
	s.Line(sscope + " shell --detach-key 'ctrl-a d' " + sb + " -- env 'PS1=remote'3'$ ' /bin/sh") // typed: remote'3', shown: remote3
	waitFor("remote3$")
	s.Keys("C-a", "d")
	waitFor("sandscope: detached")
	s.Line("echo status=$?")
	waitFor("status=0")

	// 4. SIGTERM to sandscope while attached: modes restored, 128+15, the terminal keeps running.
	s.Clear()
	s.Line(sscope + " shell " + sb + " -- env 'PS1=remote'5'$ ' /bin/sh")
	waitFor("remote5$")
	pid := attachChildPID(t, s.Display("#{pane_pid}"))
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor("leaving the terminal running")
	s.Line("echo status=$?")
	waitFor("status=143")
	sttyUnchanged("sigterm")

	// 5. the container is replaced while attached: LOST notice, exit 3, modes restored.
	s.Clear()
	s.Line(sscope + " shell " + sb + " -- env 'PS1=remote'4'$ ' /bin/sh") // typed: remote'4', shown: remote4
	waitFor("remote4$")
	if err := b.Server.ReplaceSandbox(sb); err != nil {
		t.Fatal(err)
	}
	waitFor("sandscope: LOST")
	s.Line("echo status=$?")
	waitFor("status=3")
	sttyUnchanged("lost")
}
