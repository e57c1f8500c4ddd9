package termpane

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/localbridge/bridgetest"
)

// The pane on a real terminal connection of the local bridge: typing in focus mode runs a command
// in the remote shell, its output shows in the view, and a pane resize reaches the remote PTY.
func TestPaneOnLocalBridge(t *testing.T) {
	b := bridgetest.Start(t)
	c, _ := client.New(b.URL, client.WithToken(b.Token))
	ctx := context.Background()
	sb, err := c.CreateSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := c.CreateTerminal(ctx, sb, client.TerminalRequest{Argv: []string{"env", "PS1=$ ", "/bin/sh"}, Cols: 60, Rows: 9})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := c.ConnectTerminal(ctx, sb, tm.ID, client.ConnectOptions{Cols: 60, Rows: 9})
	if err != nil {
		t.Fatal(err)
	}
	m := New(conn, 60, 10, Options{TerminalID: tm.ID, Command: tm.Command, Plain: true})
	defer m.Close()
	statuses := make(chan tea.Msg, 16)
	go func() {
		for {
			msg := waitForStatus(m.id, m.w.status)()
			statuses <- msg
			if msg.(statusMsg).closed {
				return
			}
		}
	}()
	waitView := func(want string) string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second) // a guard against hangs, not a time limit
		for {
			select {
			case msg := <-statuses:
				m.Update(msg)
			default:
			}
			m.Update(frameMsg{id: m.id})
			if v := m.View(); strings.Contains(v, want) {
				return v
			}
			if time.Now().After(deadline) {
				t.Fatalf("view never showed %q:\n%s", want, m.View())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitView("\n$ ") // the prompt at the start of a screen line (the header also holds a "$")
	m.Focus()
	for _, r := range "echo pane-$((6*7))" {
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	waitView("pane-42")
	m.SetSize(70, 13)
	for _, r := range "stty size" {
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	waitView("12 70")
	if m.State() != Live {
		t.Fatalf("state %v", m.State())
	}
}
