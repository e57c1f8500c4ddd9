package ui

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"sandscope/client"
	"sandscope/localbridge"
	"sandscope/themes"
)

// TestEndToEndLocalBridge drives the whole UI against a real local bridge on loopback: create a
// sandbox, open it, run a process, see its confirmed ending, open its log, replace the container
// and see the entry go stale.
func TestEndToEndLocalBridge(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	srv, err := localbridge.New(localbridge.Config{Root: t.TempDir(), Token: "e2e-token"})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Close(ctx)
	}()
	c, err := client.New(srv.URL(), client.WithToken("e2e-token"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := themes.Builtin("dark")
	m, err := New(Options{
		Target:   Target{Client: c, BridgeLabel: srv.URL(), BridgeURL: "local:e2e", Local: true},
		StateDir: t.TempDir(), CacheDir: t.TempDir(),
		Styles:    themes.New(p, themes.AsciiRenderer()),
		WatchFast: 200 * time.Millisecond, WatchSlow: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(140, 40))
	// out accumulates everything drawn; waits look at what arrived since the last wait
	var seen bytes.Buffer
	waitFor := func(what string, wants ...string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
			seen.Write(b)
			s := seen.String()
			for _, w := range wants {
				if !strings.Contains(s, w) {
					return false
				}
			}
			seen.Reset()
			return true
		}, teatest.WithDuration(20*time.Second), teatest.WithCheckInterval(50*time.Millisecond))
	}
	typeText := func(s string) {
		tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)})
	}
	enter := func() { tm.Send(tea.KeyMsg{Type: tea.KeyEnter}) }

	waitFor("sandboxes screen", "Sandboxes (")
	typeText("c")
	waitFor("the create prompt", "Create a sandbox")
	enter() // empty: a random ID from the bridge
	waitFor("created", "created sandbox")
	enter()
	waitFor("sandbox screen", "Processes (")
	typeText("e")
	waitFor("exec form", "Run a process")
	typeText(`sh -c "echo hello-e2e; echo warn-e2e >&2; exit 4"`)
	enter()
	waitFor("confirmed ending", "EXITED 4")
	enter()
	waitFor("log view", "hello-e2e", "warn-e2e", "ENDED (EXITED 4)")
	tm.Send(tea.KeyMsg{Type: tea.KeyEsc})
	waitFor("back", "Processes (1)")
	tm.Send(tea.KeyMsg{Type: tea.KeyEsc})
	waitFor("sandboxes", "Sandboxes (1)")
	typeText("R")
	waitFor("confirm", "Replace container?")
	typeText("y")
	waitFor("replaced", "replaced the container")
	enter()
	waitFor("stale after replacement", "STALE #1 · EXITED 4", "incarnation #2")
	srv.SetCapacityExceeded(true)
	typeText("e")
	waitFor("exec form", "Run a process")
	typeText("true")
	enter()
	waitFor("capacity error", "no capacity: the bridge's container pool is at its instance limit, 1 of 1 containers in use")
	srv.SetCapacityExceeded(false)
	typeText("q")
	waitFor("quit confirmation", "Quit sandscope?")
	typeText("y")
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	io.Copy(io.Discard, tm.FinalOutput(t))
}
