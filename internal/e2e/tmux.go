package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Wait bounds each wait for the screen: a guard against hangs on a loaded machine, never a timing
// assertion.
const Wait = 90 * time.Second

// NeedTmux finds tmux. Without it the test skips, or fails when CI is set (CI installs it: a
// silent skip there would hide every end-to-end test). -short skips too: these tests build the
// binary and drive it in tmux.
func NeedTmux(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and drives it in tmux")
	}
	path, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("tmux is required under CI: %v", err)
		}
		t.Skip("tmux not installed")
	}
	return path
}

// Session is one private tmux server (its own socket, so nothing reaches the user's tmux) and the
// tmux session the keys go to. The server is killed when the test ends.
type Session struct {
	T      testing.TB
	Tmux   string   // the tmux binary
	Socket string   // the server's socket
	Env    []string // the environment of tmux commands (and so of a server they start); nil: inherited
	Name   string   // the tmux session commands address
	PID    int      // the pane's process (Start, ReadPID); the cleanup waits for it to end

	Wait     time.Duration // bound of WaitFor and WaitUntil; Wait (the constant) when 0
	Poll     time.Duration // between two looks at the screen; 150 ms when 0
	History  int           // rows of scrollback Screen includes (capture-pane -S -History); none when 0
	Diagnose func() string // appended to a wait's failure (say, the program's goroutines)
}

// NewSession prepares a tmux server with its socket under dir, addressing session name, and kills
// it (and waits for the pane's process) when the test ends. Start creates the session.
func NewSession(t testing.TB, tmuxPath, dir, name string, env []string) *Session {
	s := &Session{T: t, Tmux: tmuxPath, Socket: filepath.Join(dir, "tmux.sock"), Env: env, Name: name}
	t.Cleanup(s.Kill)
	return s
}

// Sibling addresses another session of the same server (created with Start); the server's cleanup
// is s's.
func (s *Session) Sibling(name string) *Session {
	o := *s
	o.Name, o.PID = name, 0
	return &o
}

// Start creates the session, cols×rows, running command (one shell command line, or an argv), and
// reads the pane's PID. The first Start starts the server, without any tmux configuration file.
func (s *Session) Start(cols, rows int, command ...string) {
	s.T.Helper()
	args := append([]string{"-f", os.DevNull, "new-session", "-d", "-s", s.Name,
		"-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows)}, command...)
	s.Must(args...)
	s.ReadPID()
}

// Run runs one tmux command against the server.
func (s *Session) Run(args ...string) (string, error) {
	cmd := exec.Command(s.Tmux, append([]string{"-S", s.Socket}, args...)...)
	cmd.Env = s.Env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Must runs one tmux command and fails the test if tmux does.
func (s *Session) Must(args ...string) string {
	s.T.Helper()
	out, err := s.Run(args...)
	if err != nil {
		s.T.Fatal(err)
	}
	return out
}

// Keys sends tmux key names (Enter, Escape, C-]) or words.
func (s *Session) Keys(keys ...string) {
	s.T.Helper()
	s.Must(append([]string{"send-keys", "-t", s.Name}, keys...)...)
}

// Type sends text literally, as one write.
func (s *Session) Type(text string) {
	s.T.Helper()
	s.Must("send-keys", "-t", s.Name, "-l", text)
}

// Line types a command line and presses Enter.
func (s *Session) Line(text string) {
	s.T.Helper()
	s.Type(text)
	s.Keys("Enter")
}

// Screen is the pane as text (plus History rows of scrollback).
func (s *Session) Screen() string {
	s.T.Helper()
	args := []string{"capture-pane", "-p", "-t", s.Name}
	if s.History > 0 {
		args = append(args, "-S", strconv.Itoa(-s.History))
	}
	return s.Must(args...)
}

// ScreenEscapes is the pane with its colour and attribute sequences (capture-pane -e): what tmux
// keeps of what the program wrote, to check that nothing else reached the terminal.
func (s *Session) ScreenEscapes() string {
	s.T.Helper()
	return s.Must("capture-pane", "-p", "-e", "-t", s.Name)
}

// Display is a tmux format (#{pane_title}, #{window_bell_flag}, …) of the pane, trimmed.
func (s *Session) Display(format string) string {
	s.T.Helper()
	return strings.TrimSpace(s.Must("display-message", "-p", "-t", s.Name, format))
}

// Resize resizes the session's window.
func (s *Session) Resize(cols, rows int) {
	s.T.Helper()
	s.Must("resize-window", "-t", s.Name, "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows))
}

// Clear resets the pane and drops its scrollback.
func (s *Session) Clear() {
	s.T.Helper()
	s.Must("send-keys", "-t", s.Name, "-R")
	s.Must("clear-history", "-t", s.Name)
}

// PipePane appends every byte the pane's program writes to the terminal to file (bells,
// notifications, titles: what capture-pane does not show).
func (s *Session) PipePane(file string) {
	s.T.Helper()
	s.Must("pipe-pane", "-o", "-t", s.Name, "cat >> '"+strings.ReplaceAll(file, "'", `'\''`)+"'")
}

// StopPipe stops PipePane's copying (ignoring a pane that already closed).
func (s *Session) StopPipe() { _, _ = s.Run("pipe-pane", "-t", s.Name) }

// ReadPID reads the pane's process.
func (s *Session) ReadPID() {
	s.T.Helper()
	pid, err := strconv.Atoi(s.Display("#{pane_pid}"))
	if err != nil {
		s.T.Fatalf("pane pid: %v", err)
	}
	s.PID = pid
}

// Respawn runs command in the pane again (killing what runs there) and reads its PID.
func (s *Session) Respawn(command string) {
	s.T.Helper()
	s.Must("respawn-pane", "-k", "-t", s.Name, command)
	s.ReadPID()
}

// WaitFor polls the screen until it shows want and every one of more, and returns it.
func (s *Session) WaitFor(what, want string, more ...string) string {
	s.T.Helper()
	wants := append([]string{want}, more...)
	return s.WaitUntil(what, func(sc string) bool {
		for _, w := range wants {
			if !strings.Contains(sc, w) {
				return false
			}
		}
		return true
	})
}

// WaitUntil polls the screen until ok accepts it, and returns it. Past the deadline the test fails
// with what the screen showed last (and Diagnose's account).
func (s *Session) WaitUntil(what string, ok func(string) bool) string {
	s.T.Helper()
	wait, poll := s.Wait, s.Poll
	if wait <= 0 {
		wait = Wait
	}
	if poll <= 0 {
		poll = 150 * time.Millisecond
	}
	deadline := time.Now().Add(wait)
	for {
		sc := s.Screen()
		if ok(sc) {
			return s.settled(sc, ok)
		}
		if time.Now().After(deadline) {
			extra := ""
			if s.Diagnose != nil {
				extra = s.Diagnose()
			}
			s.T.Fatalf("waiting %v for %s; the screen shows:\n%s%s", wait, what, sc, extra)
		}
		time.Sleep(poll)
	}
}

// settled returns a screen that ok accepts and that a second capture repeats: a capture can land
// while the program's frame is still being written (tmux takes it in chunks), and a caller that
// goes on to check the rest of the screen must not judge half a frame. A screen that keeps
// changing (output streaming in) is returned after a few captures, as the last one ok accepts.
func (s *Session) settled(sc string, ok func(string) bool) string {
	for i := 0; i < 3; i++ {
		time.Sleep(10 * time.Millisecond)
		again := s.Screen()
		if again == sc || !ok(again) {
			return sc
		}
		sc = again
	}
	return sc
}

// Kill kills the tmux server and makes sure the pane's process is gone (SIGKILL after 20 s).
func (s *Session) Kill() {
	_, _ = s.Run("kill-server")
	if s.PID <= 0 {
		return
	}
	deadline := time.Now().Add(20 * time.Second)
	for Alive(s.PID) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(s.PID, syscall.SIGKILL)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Alive reports whether pid runs (a zombie waiting for its parent to reap it does not count).
func Alive(pid int) bool {
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

// Lines splits a screen into its rows.
func Lines(sc string) []string { return strings.Split(strings.TrimRight(sc, "\n"), "\n") }
