package e2e_test

// Signal tests: closing the terminal that runs the TUI (SIGHUP), a SIGTERM, and SIGHUP, SIGTERM or
// SIGKILL of `sandscope serve` leave no process of the bridge behind. Processes of a bridge are
// found by where they run: every process of a sandbox has its working directory (or, isolated, its
// root) under the bridge's state directory, which is private to each test.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/internal/e2e"
)

// bridgeProcs lists the live processes whose working directory or root lies under dir.
func bridgeProcs(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || !e2e.Alive(pid) {
			continue
		}
		if underDir(pid, dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// underDir says pid runs under dir: its working directory is there, or (an isolated process, whose
// paths are its own namespace's) its mount table holds dir's sandbox workspace at /workspace.
func underDir(pid int, dir string) bool {
	p, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err == nil && (p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))) {
		return true
	}
	mi, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	return err == nil && strings.Contains(string(mi), dir+string(filepath.Separator)) && strings.Contains(string(mi), " /workspace ")
}

// waitOrphans waits until no process runs under dir, failing with the survivors after 20 s.
// It returns how long the last one took to go.
func waitOrphans(t *testing.T, what, dir string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		left := bridgeProcs(dir)
		if len(left) == 0 {
			return time.Since(start)
		}
		if time.Since(start) > 20*time.Second {
			var desc []string
			for _, pid := range left {
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				desc = append(desc, fmt.Sprintf("%d %q", pid, strings.ReplaceAll(string(cmd), "\x00", " ")))
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("%s: %d orphans left: %s", what, len(left), strings.Join(desc, "; "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func sigName(sig syscall.Signal) string {
	return map[syscall.Signal]string{syscall.SIGHUP: "HUP", syscall.SIGTERM: "TERM", syscall.SIGKILL: "KILL"}[sig]
}

// waitSleeps waits until n "sleep 600" processes run under dir.
func waitSleeps(t *testing.T, dir string, n int) {
	t.Helper()
	deadline := time.Now().Add(e2e.Wait)
	for {
		got := 0
		for _, pid := range bridgeProcs(dir) {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if string(cmd) == "sleep\x00600\x00" {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sleep processes under %s, want %d", got, dir, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitProcs waits until at least n processes run under dir.
func waitProcs(t *testing.T, what, dir string, n int) {
	t.Helper()
	deadline := time.Now().Add(e2e.Wait)
	for len(bridgeProcs(dir)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d processes under %s, want %d", what, len(bridgeProcs(dir)), dir, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestE2ESignalsEndTUIProcesses sends SIGHUP (the terminal window closed) and SIGTERM to the TUI
// running the demo on its embedded bridge: the TUI ends and every demo process with it.
func TestE2ESignalsEndTUIProcesses(t *testing.T) {
	tmuxPath := e2e.NeedTmux(t)
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		t.Run(sigName(sig), func(t *testing.T) {
			dir := t.TempDir()
			s := e2e.LaunchTUI(t, tmuxPath, dir, e2e.Env(t, dir), "--demo")
			s.WaitFor("the embedded bridge", "(embedded)")
			state := filepath.Join(dir, "state")
			waitProcs(t, "the demo", state, 2)
			// a process that writes nothing: it would not die of a broken pipe
			s.WaitFor("the demo sandbox", "> demo")
			// the demo may still be replacing its container: Enter again until the screen opens
			for deadline := time.Now().Add(e2e.Wait); ; {
				s.Keys("Enter")
				time.Sleep(time.Second)
				if sc := s.Screen(); strings.Contains(sc, "Sandbox demo") && strings.Contains(sc, "Processes (") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the sandbox screen never opened:\n%s", s.Screen())
				}
			}
			s.Keys("e")
			s.WaitFor("the exec prompt", "Run a process in demo")
			s.Type("sh -c 'sleep 600 & sleep 600; wait'")
			s.Keys("Enter")
			s.WaitFor("the process started", "started ")
			waitSleeps(t, state, 2)
			if err := syscall.Kill(s.PID, sig); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for e2e.Alive(s.PID) {
				if time.Now().After(deadline) {
					t.Fatalf("sandscope still runs after %v", sig)
				}
				time.Sleep(50 * time.Millisecond)
			}
			took := waitOrphans(t, "after "+sig.String(), state)
			t.Logf("%v: 0 orphans (the last went %v after the TUI)", sig, took.Round(time.Millisecond))
		})
	}
}

// TestE2ESignalsEndServeProcesses starts `sandscope serve`, runs a process with a child of its own
// (a grandchild of the bridge) and a terminal, and checks SIGHUP, SIGTERM and SIGKILL of serve
// leave none of them running.
func TestE2ESignalsEndServeProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	type run struct {
		sig   syscall.Signal
		plain bool // SANDSCOPE_ISOLATION=none: the supervisor kills the tree itself
	}
	for _, r := range []run{{syscall.SIGHUP, false}, {syscall.SIGTERM, false}, {syscall.SIGKILL, false}, {syscall.SIGKILL, true}} {
		sig := r.sig
		name := sigName(sig)
		if r.plain {
			name += "-without-namespaces"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			env := e2e.Env(t, dir)
			if r.plain {
				env = append(env, "SANDSCOPE_ISOLATION=none")
			}
			cmd := exec.Command(e2e.Binary(t), "serve")
			cmd.Env = env
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			var url string
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if u, ok := strings.CutPrefix(sc.Text(), "sandscope local bridge listening on "); ok {
					url = u
					break
				}
			}
			go func() { // keep draining so the banner never blocks serve
				for sc.Scan() {
				}
			}()
			if url == "" {
				t.Fatal("serve printed no URL")
			}
			state := filepath.Join(dir, "state")
			tok, err := os.ReadFile(filepath.Join(state, "sandscope", "token"))
			if err != nil {
				t.Fatal(err)
			}
			c, err := client.New(url, client.WithToken(strings.TrimSpace(string(tok))))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := c.StartProcess(ctx, "sig", client.ExecRequest{Argv: []string{"sh", "-c", "sleep 600 & sleep 600; wait"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.CreateTerminal(ctx, "sig", client.TerminalRequest{Argv: []string{"sh", "-c", "sleep 600 & sleep 600"}}); err != nil {
				t.Fatal(err)
			}
			waitSleeps(t, state, 4)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			took := waitOrphans(t, "after "+sig.String(), state)
			t.Logf("%v: 0 orphans (the last went %v after serve)", sig, took.Round(time.Millisecond))
		})
	}
}
