package main

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
	"sandscope/localbridge/bridgetest"
)

var attachSizeRE = regexp.MustCompile(`rows \d+; columns \d+;`)

type attachTmux struct {
	t      *testing.T
	tmux   string
	socket string
	name   string
}

func (s *attachTmux) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command(s.tmux, append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

// line types a command line and presses Enter.
func (s *attachTmux) line(text string) {
	s.t.Helper()
	s.run("send-keys", "-t", s.name, "-l", text)
	s.run("send-keys", "-t", s.name, "Enter")
}

func (s *attachTmux) keys(keys ...string) {
	s.t.Helper()
	s.run(append([]string{"send-keys", "-t", s.name}, keys...)...)
}

func (s *attachTmux) capture() string {
	return s.run("capture-pane", "-p", "-t", s.name, "-S", "-200")
}

// waitFor polls the pane until it shows want. The deadline is a guard against hangs on a loaded
// machine, not a performance assertion.
func (s *attachTmux) waitFor(want string) string {
	s.t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		got := s.capture()
		if strings.Contains(got, want) {
			return got
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("pane never showed %q; pane:\n%s", want, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *attachTmux) clear() {
	s.t.Helper()
	s.run("send-keys", "-t", s.name, "-R")
	s.run("clear-history", "-t", s.name)
}

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
	tmux := needTmux(t)
	pager := "less"
	if _, err := exec.LookPath("less"); err != nil {
		pager = "vi"
	}
	bin := sandscopeBinary(t)
	b := bridgetest.Start(t)
	dir := t.TempDir()
	tok := tokenFile(t, b)
	c, _ := client.New(b.URL, client.WithToken(b.Token))
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}

	s := &attachTmux{t: t, tmux: tmux, socket: filepath.Join(dir, "tmux.sock"), name: "e2e"}
	s.run("-f", "/dev/null", "new-session", "-d", "-s", s.name, "-x", "120", "-y", "40",
		"env", "-i", "PATH="+os.Getenv("PATH"), "HOME="+dir, "TERM=xterm-256color", "PS1=local$ ", "/bin/sh")
	t.Cleanup(func() { _ = exec.Command(tmux, "-S", s.socket, "kill-server").Run() })
	s.waitFor("local$")

	sscope := fmt.Sprintf("%s --url %s --token-file %s", bin, b.URL, tok)
	before := filepath.Join(dir, "stty.before")
	s.line("stty -a > " + before + "; echo MARK$((1+1))")
	s.waitFor("MARK2")

	sttyUnchanged := func(step string) {
		t.Helper()
		after := filepath.Join(dir, "stty."+step)
		s.line(fmt.Sprintf("stty -a > %s; echo STTY$((40+2))%s", after, step))
		s.waitFor("STTY42" + step)
		a, _ := os.ReadFile(before)
		bb, _ := os.ReadFile(after)
		// The window was resized on purpose; every mode and control character must match.
		a, bb = attachSizeRE.ReplaceAll(a, nil), attachSizeRE.ReplaceAll(bb, nil)
		if len(a) == 0 || !bytes.Equal(a, bb) {
			t.Fatalf("terminal modes changed after %s:\nbefore:\n%s\nafter:\n%s", step, a, bb)
		}
	}

	// 1. shell: output, resize, a full-screen program, detach.
	s.line(sscope + " shell " + sb + " -- env 'PS1=remote'1'$ ' /bin/sh") // typed: remote'1', shown: remote1
	s.waitFor("remote1$")
	s.line("echo hi$((2+3))")
	s.waitFor("hi5")
	s.run("resize-window", "-t", s.name, "-x", "100", "-y", "30")
	s.line("stty size; echo SIZE$((1+1))")
	if got := s.waitFor("SIZE2"); !strings.Contains(got, "30 100") {
		t.Fatalf("stty size after resize-window:\n%s", got)
	}
	if pager == "less" {
		s.line("seq 1 500 | less")
		s.waitFor("\n29\n")
		s.keys("q")
	} else {
		s.line("vi")
		time.Sleep(300 * time.Millisecond)
		s.keys("Escape", ":q!", "Enter")
	}
	s.line("echo back$((3+4))")
	s.waitFor("back7")
	if alt := strings.TrimSpace(s.run("display-message", "-p", "-t", s.name, "#{alternate_on}")); alt != "0" {
		t.Fatalf("still on the alternate screen after quitting %s", pager)
	}
	s.keys("C-]")
	s.waitFor("sandscope: detached")
	s.line("echo status=$?")
	s.waitFor("status=0")
	sttyUnchanged("detach")

	// 2. attach to the same terminal, exit 5 remotely.
	terms, err := c.ListTerminals(ctx, sb)
	if err != nil || len(terms) != 1 {
		t.Fatalf("terminals: %v %+v", err, terms)
	}
	s.clear()
	s.line(sscope + " attach " + sb + " " + terms[0].ID)
	s.waitFor("hi5") // replayed output
	s.line("echo again$((4+4))")
	s.waitFor("again8")
	s.line("exit 5")
	s.waitFor("ended: EXITED 5")
	s.line("echo status=$?")
	s.waitFor("status=5")
	sttyUnchanged("exit")

	// 3. a prefix detach key passes the prefix through when doubled, then detaches.
	s.clear()
	s.line(sscope + " shell --detach-key 'ctrl-a d' " + sb + " -- env 'PS1=remote'3'$ ' /bin/sh") // typed: remote'3', shown: remote3
	s.waitFor("remote3$")
	s.keys("C-a", "d")
	s.waitFor("sandscope: detached")
	s.line("echo status=$?")
	s.waitFor("status=0")

	// 4. SIGTERM to sandscope while attached: modes restored, 128+15, the terminal keeps running.
	s.clear()
	s.line(sscope + " shell " + sb + " -- env 'PS1=remote'5'$ ' /bin/sh")
	s.waitFor("remote5$")
	pid := attachChildPID(t, strings.TrimSpace(s.run("display-message", "-p", "-t", s.name, "#{pane_pid}")))
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s.waitFor("leaving the terminal running")
	s.line("echo status=$?")
	s.waitFor("status=143")
	sttyUnchanged("sigterm")

	// 5. the container is replaced while attached: LOST notice, exit 3, modes restored.
	s.clear()
	s.line(sscope + " shell " + sb + " -- env 'PS1=remote'4'$ ' /bin/sh") // typed: remote'4', shown: remote4
	s.waitFor("remote4$")
	if err := b.Server.ReplaceSandbox(sb); err != nil {
		t.Fatal(err)
	}
	s.waitFor("sandscope: LOST")
	s.line("echo status=$?")
	s.waitFor("status=3")
	sttyUnchanged("lost")
}
