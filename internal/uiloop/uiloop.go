// Package uiloop is a minimal Bubble Tea runtime for driving one component without a terminal,
// used by the log view soak and scripts/bench: commands run on their own goroutines, their
// messages come back to the one goroutine that calls Update, and View runs at a steady frame rate.
package uiloop

import (
	"context"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/ui/common"
)

// Loop drives one component until its context ends.
type Loop struct {
	ctx  context.Context
	m    common.Component
	msgs chan tea.Msg
}

// New returns a loop for m; nothing runs until Run or Until.
func New(ctx context.Context, m common.Component) *Loop {
	return &Loop{ctx: ctx, m: m, msgs: make(chan tea.Msg, 64)}
}

// Run executes cmd on its own goroutine (a batch's commands each on theirs) and queues its message.
func (l *Loop) Run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		msg := cmd()
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				l.Run(c)
			}
			return
		}
		if msg == nil {
			return
		}
		select {
		case l.msgs <- msg:
		case <-l.ctx.Done():
		}
	}()
}

// Update hands msg to the component now and runs the command it returns.
func (l *Loop) Update(msg tea.Msg) {
	_, cmd := l.m.Update(msg)
	l.Run(cmd)
}

// Until handles queued messages and renders a frame every frameEvery until done reports true
// for a handled message (that message's frame is rendered and counted too).
func (l *Loop) Until(frameEvery time.Duration, done func(tea.Msg) bool) (frames int, err error) {
	tick := time.NewTicker(frameEvery)
	defer tick.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return frames, l.ctx.Err()
		case <-tick.C:
			_ = l.m.View()
			frames++
		case msg := <-l.msgs:
			l.Update(msg)
			if done(msg) {
				_ = l.m.View()
				return frames + 1, nil
			}
		}
	}
}
