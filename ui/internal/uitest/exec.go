package uitest

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// Exec runs cmd and the commands it batches, concurrently, and returns the messages that arrive
// within wait. Commands that wait longer (ticks, idle streams) are left running and their messages
// dropped: tests feed those by hand.
func Exec(cmd tea.Cmd, wait time.Duration) []tea.Msg {
	out := make(chan tea.Msg, 64)
	var start func(c tea.Cmd)
	start = func(c tea.Cmd) {
		if c == nil {
			return
		}
		go func() {
			msg := c()
			if b, ok := msg.(tea.BatchMsg); ok {
				for _, sub := range b {
					start(sub)
				}
				return
			}
			select {
			case out <- msg:
			default:
			}
		}()
	}
	start(cmd)
	var msgs []tea.Msg
	deadline := time.After(wait)
	for {
		select {
		case m := <-out:
			msgs = append(msgs, m)
		case <-deadline:
			return msgs
		}
	}
}

// Key makes a key message from a bubbletea key name ("enter", "esc", "tab") or runes ("j", "/").
func Key(s string) tea.KeyMsg {
	switch s {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "shift+tab":
		return tea.KeyMsg{Type: tea.KeyShiftTab}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "space":
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	case "end":
		return tea.KeyMsg{Type: tea.KeyEnd}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

// Type makes one key message per rune of s.
func Type(s string) []tea.KeyMsg {
	var out []tea.KeyMsg
	for _, r := range s {
		out = append(out, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	return out
}
