package main

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"sandscope/client"
	"sandscope/record"
	"sandscope/sanitize"
)

// commandRecordQueue bounds the events a command may queue for its record before it drops them.
const commandRecordQueue = 1024

// commandRecord writes what a command observes (exec, logs -f) to the record from a goroutine of
// its own: the record is opened there when the first event comes (the command already follows its
// stream), and events
// reach it through a bounded queue, so recording never delays or blocks the output. An event that
// finds the queue full is dropped and counted. Problems (the record could not be opened or
// written, events dropped) are told on stderr when the command ends, after its output.
type commandRecord struct {
	q       chan record.Event
	done    chan struct{}
	dropped atomic.Int64
	stderr  io.Writer
	notes   []string // written by the goroutine, read after done
}

// startCommandRecord starts recording for a command; open opens the record (nil: not recording).
func startCommandRecord(open func() (*record.Record, error), stderr io.Writer) *commandRecord {
	c := &commandRecord{q: make(chan record.Event, commandRecordQueue), done: make(chan struct{}), stderr: stderr}
	go c.run(open)
	return c
}

func (c *commandRecord) run(open func() (*record.Record, error)) {
	defer close(c.done)
	// The record opens when the first event arrives, not before: a command records only its
	// stream's events (interruptions, gaps, the ending), so a clean replay opens it after the last
	// byte instead of taking CPU from the stream, and a command that saw nothing opens nothing.
	first, ok := <-c.q
	if !ok {
		return
	}
	// a lock another process holds on the record is waited for: say so while the command goes on
	slow := time.AfterFunc(commandRecordSlowOpen, func() {
		fmt.Fprintf(c.stderr, "sandscope: record: waiting for another sandscope process's lock on the record (the command goes on)\n")
	})
	rec, err := open()
	slow.Stop()
	if err != nil {
		c.notes = append(c.notes, "not recording: "+err.Error())
	}
	if rec == nil {
		for range c.q {
		}
		return
	}
	c.notes = append(c.notes, rec.Notices()...)
	rec.Add(first)
	for q := c.q; q != nil; {
		select {
		case ev, ok := <-q:
			if !ok {
				q = nil
				continue
			}
			rec.Add(ev)
		case <-rec.NoticeC():
			c.takeNotices(rec)
		}
	}
	werr := rec.Err()
	if err := rec.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = rec.Err()
	}
	c.takeNotices(rec)
	if werr != nil {
		c.notes = append(c.notes, fmt.Sprintf("the record could not be written (%v); the output above is complete, but this run may be missing from sandscope report", werr))
	}
}

// commandRecordSlowOpen is how long opening the record may take before the command says it waits.
const commandRecordSlowOpen = 3 * time.Second

// takeNotices keeps what the record says happened to it for the end of the command; a wait for
// another process's lock is told at once.
func (c *commandRecord) takeNotices(rec *record.Record) {
	for _, n := range rec.TakeNotices() {
		if strings.HasPrefix(n, "waiting ") {
			fmt.Fprintf(c.stderr, "sandscope: record: %s\n", sanitize.Message(n))
			continue
		}
		c.notes = append(c.notes, n)
	}
}

// Add queues ev without waiting; a nil commandRecord records nothing.
func (c *commandRecord) Add(ev record.Event) {
	if c == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	select {
	case c.q <- ev:
	default:
		c.dropped.Add(1)
	}
}

// Close writes what is queued, closes the record and tells what went wrong, if anything.
func (c *commandRecord) Close() {
	if c == nil {
		return
	}
	close(c.q)
	<-c.done
	if n := c.dropped.Load(); n > 0 {
		c.notes = append(c.notes, fmt.Sprintf("%d events were not recorded (the record's writer fell behind)", n))
	}
	for _, n := range c.notes {
		fmt.Fprintf(c.stderr, "sandscope: record: %s\n", sanitize.Message(n))
	}
}

// observe returns an observer that records a follower's events (nil without a record). Quiet
// events are not recorded: a status lookup saying "still running" is no news.
func (c *commandRecord) observe(sandbox, process string) func(client.LogEvent) {
	if c == nil {
		return nil
	}
	return func(ev client.LogEvent) {
		if ev.Kind != client.Quiet {
			c.Add(record.FromLogEvent(sandbox, process, ev))
		}
	}
}
