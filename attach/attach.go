package attach

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sandscope/sanitize"
	"sync"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/muesli/cancelreader"

	"sandscope/client"
)

// Conn is what attach needs of a terminal connection: client.TermConn, the type the embedded
// pane uses too (*client.TerminalConn for preview terminals, *client.PTYConn for stable PTYs).
type Conn = client.TermConn

// Options configure Run. Zero values mean os.Stdin/os.Stdout/os.Stderr and ctrl-].
type Options struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	DetachKey      string // e.g. "ctrl-]" or "ctrl-a d"
	// Label names the terminal in notices, e.g. "sandbox abc terminal 0f9d".
	Label string
	// ReattachHint is printed after a detach, e.g. "sandscope attach abc 0f9d".
	ReattachHint string
	// NoRaw leaves the terminal mode alone (for callers that already manage it).
	NoRaw bool
	// OwnScreen runs the attachment on the alternate screen, cleared, and clears the screen it ends
	// on before leaving it: the TUI uses it, so nothing of the attachment stays on the user's
	// screen once the TUI is gone (what the remote program printed belongs to the terminal, which
	// the TUI still shows).
	OwnScreen bool
	// EOFWait bounds how long an attachment whose input is not a terminal lasts once that input
	// ended (a pipe or a file, e.g. printf 'make\n' | sandscope shell): the end of input is
	// delivered as ctrl-D once the terminal is ready (its output has settled), again while it stays
	// silent, and when the terminal neither ends nor prints for EOFWait, Run returns InputEnded.
	// Default 10s.
	EOFWait time.Duration
}

// Ending says why Run returned.
type Ending int

const (
	Detached     Ending = iota // the user typed the detach key
	Exited                     // the remote terminal exited (Result.Exit)
	Lost                       // the terminal vanished with its container
	Failed                     // reconnecting failed past the retry budget
	Errored                    // the bridge reported the terminal failed, or the stream broke
	Cancelled                  // the context was cancelled or a signal arrived
	EndedUnknown               // the shell ended, exit code unknown (stable bridges never report it)
	InputEnded                 // scripted input ended and the terminal did not end within Options.EOFWait
)

func (e Ending) String() string {
	return [...]string{"detached", "exited", "lost", "failed", "error", "cancelled", "ended (exit code unknown)", "input ended"}[e]
}

// Result is how an attachment ended.
type Result struct {
	Ending Ending
	Exit   *client.Exit      // Exited
	Event  *client.TermEvent // the final event, when there was one
	Signal os.Signal         // Cancelled by a signal
}

// ExitStatus is the process exit status the command line uses: 0 on detach, the remote code on
// exit, 3 when lost, 4 when reconnecting failed, 255 on other errors and when the shell ended
// with an unknown exit code, 128+n for a signal.
func (r Result) ExitStatus() int {
	switch r.Ending {
	case Detached:
		return 0
	case Exited:
		if r.Exit != nil {
			return r.Exit.Code
		}
		return 0
	case Lost:
		return 3
	case Failed:
		return 4
	case Cancelled:
		if s, ok := r.Signal.(syscall.Signal); ok {
			return 128 + int(s)
		}
		return 130
	}
	return 255
}

// resetModes undoes modes a remote program may have left on when we leave without it: mouse
// reporting, bracketed paste, application keys, hidden cursor, colours.
const resetModes = "\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l\x1b[?1l\x1b>\x1b[?25h\x1b[0m"

// Run attaches the user's terminal to conn until detach, the terminal's end, ctx or a signal. The
// terminal mode is restored on every path, including a panic. Run does not close conn.
func Run(ctx context.Context, conn Conn, opts Options) (res Result, err error) {
	if opts.Stdin == nil {
		opts.Stdin = os.Stdin
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.DetachKey == "" {
		opts.DetachKey = DefaultDetachKey
	}
	if opts.EOFWait <= 0 {
		opts.EOFWait = 10 * time.Second
	}
	key, err := ParseDetachKey(opts.DetachKey)
	if err != nil {
		return Result{Ending: Errored}, err
	}

	ttyFd, isTTY := ttyOf(opts.Stdin)
	outFd, outTTY := ttyOf(opts.Stdout)
	raw := false
	if isTTY && !opts.NoRaw {
		st, err := term.MakeRaw(ttyFd)
		if err != nil {
			return Result{Ending: Errored}, fmt.Errorf("raw mode: %w", err)
		}
		raw = true
		// Deferred calls also run while a panic unwinds, so this covers panics on this goroutine.
		defer func() { _ = term.Restore(ttyFd, st) }()
	}
	n := &notifier{w: opts.Stderr, raw: raw}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Window size: the fd that is a terminal tells it; SIGWINCH says when it changes.
	sizeFd, haveSize := ttyFd, isTTY
	if !haveSize && outTTY {
		sizeFd, haveSize = outFd, true
	}
	winch := make(chan os.Signal, 1)
	if haveSize {
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		if w, h, err := term.GetSize(sizeFd); err == nil && w > 0 && h > 0 {
			_ = conn.Resize(w, h)
		}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	// A cancellable reader lets the input goroutine end with Run, so no keystroke meant for the
	// caller (the TUI after tea.Exec) is swallowed. Stdin that epoll cannot watch (a regular file,
	// /dev/null) is read plainly; its goroutine then ends at the next read or EOF.
	var in io.Reader = opts.Stdin
	cr, crErr := cancelreader.NewReader(opts.Stdin)
	if crErr == nil {
		in = cr
	}
	detached := make(chan struct{})
	inDone := make(chan struct{})
	var inputEnded chan struct{} // closed when scripted input reached its end
	if !isTTY {
		inputEnded = make(chan struct{})
	}
	go func() {
		defer close(inDone)
		pumpInput(ctx, in, conn, key, n, detached, inputEnded)
	}()
	eof := &eofDelivery{conn: conn, wait: opts.EOFWait}
	var eofTick <-chan time.Time
	ended := inputEnded
	defer func() {
		cancel()
		if cr != nil && cr.Cancel() {
			<-inDone
			_ = cr.Close()
		}
	}()

	alt := &altTracker{}
	for {
		select {
		case <-ended:
			ended = nil
			eof.begin(time.Now())
			t := time.NewTicker(eofPoll)
			defer t.Stop()
			eofTick = t.C
		case now := <-eofTick:
			if eof.tick(now) {
				if raw {
					n.leave(opts.Stdout, alt)
				}
				return Result{Ending: InputEnded}, nil
			}
		case <-detached:
			if raw {
				n.leave(opts.Stdout, alt)
			}
			msg := "detached"
			if opts.Label != "" {
				msg += " from " + opts.Label
			}
			if opts.ReattachHint != "" {
				msg += "; reattach with: " + opts.ReattachHint
			}
			n.printf("%s", msg)
			return Result{Ending: Detached}, nil
		case <-ctx.Done():
			if raw {
				n.leave(opts.Stdout, alt)
			}
			return Result{Ending: Cancelled}, ctx.Err()
		case s := <-sigs:
			if raw {
				n.leave(opts.Stdout, alt)
			}
			n.printf("%v: leaving the terminal running", s)
			return Result{Ending: Cancelled, Signal: s}, nil
		case <-winch:
			if w, h, err := term.GetSize(sizeFd); err == nil && w > 0 && h > 0 {
				_ = conn.Resize(w, h)
			}
		case ev, ok := <-conn.Events():
			if ok && (ev.Kind == client.TermOutput || ev.Kind == client.TermReplayed) {
				eof.output(time.Now())
			}
			if !ok {
				if raw {
					n.leave(opts.Stdout, alt)
				}
				return Result{Ending: Errored}, errors.New("terminal connection ended without a final event")
			}
			if r, done := handle(ev, opts, n, alt); done {
				if raw {
					n.leave(opts.Stdout, alt)
				}
				return r, nil
			}
		}
	}
}

// handle writes output and notices for one event; done reports a final event.
func handle(ev client.TermEvent, opts Options, n *notifier, alt *altTracker) (Result, bool) {
	switch ev.Kind {
	case client.TermOutput:
		alt.scan(ev.Data)
		if _, err := opts.Stdout.Write(ev.Data); err != nil {
			return Result{Ending: Errored, Event: &ev}, true
		}
	case client.TermGap:
		n.printf("GAP: the bridge evicted output before this point (resuming at its oldest byte)")
	case client.TermInterrupted:
		what := ev.Reason
		if what == "" {
			what = "connection lost"
		}
		n.printf("interrupted (%d %s); reconnecting from cursor…", ev.CloseCode, what)
	case client.TermReconnecting:
		if ev.Attempt > 1 {
			n.printf("reconnecting (attempt %d)…", ev.Attempt)
		}
	case client.TermResumed:
		n.printf("resumed from cursor (attempt %d)", ev.Attempt)
	case client.TermReplayed:
		// Stable PTYs replay their whole ring buffer on every connect: clear, repaint, say so.
		if _, err := opts.Stdout.Write([]byte("\x1b[H\x1b[2J\x1b[3J")); err != nil {
			return Result{Ending: Errored, Event: &ev}, true
		}
		alt.scan(ev.Data)
		if _, err := opts.Stdout.Write(ev.Data); err != nil {
			return Result{Ending: Errored, Event: &ev}, true
		}
		n.printf("REPLAYED: the bridge resent its buffer of this shell (%d bytes; no cursors on stable, so the screen was cleared and repainted)", len(ev.Data))
	case client.TermEnded:
		n.printf("ENDED: the shell ended; exit code unknown (the stable bridge does not report it)")
		return Result{Ending: EndedUnknown, Event: &ev}, true
	case client.TermExited:
		return Result{Ending: Exited, Exit: ev.Exit, Event: &ev}, true
	case client.TermError:
		if ev.CloseCode != 0 {
			n.printf("terminal error: %s", ev.Reason)
			return Result{Ending: Errored, Event: &ev}, true
		}
		n.printf("bridge error: %s", ev.Reason)
	case client.TermLost:
		msg := "LOST: " + ev.Reason
		if ev.Loss != nil {
			msg += " [" + ev.Loss.Lookup
			if ev.Loss.Inferred {
				msg += "; inferred"
			}
			msg += "]"
		}
		n.printf("%s", msg)
		return Result{Ending: Lost, Event: &ev}, true
	case client.TermFailed:
		msg := "FAILED: " + ev.Reason
		if ev.Err != nil {
			msg += ": " + ev.Err.Error()
		}
		n.printf("%s", msg)
		return Result{Ending: Failed, Event: &ev}, true
	}
	return Result{}, false
}

// pumpInput copies stdin to the terminal, watching for the detach key. EOF on a non-terminal stdin
// (scripted input from a pipe or a file; inputEnded non-nil) closes inputEnded: Run then delivers
// it as ^D, the terminal's end of input, once the terminal is ready for it (eofDelivery), so a
// shell reading it ends instead of waiting forever. On a terminal, EOF is passed on at once.
func pumpInput(ctx context.Context, in io.Reader, conn Conn, key DetachKey, n *notifier, detached chan<- struct{}, inputEnded chan<- struct{}) {
	d := &detector{key: key}
	buf := make([]byte, 32<<10)
	warned := false
	for {
		k, err := in.Read(buf)
		if k > 0 {
			out, det := d.feed(buf[:k])
			if len(out) > 0 {
				if _, werr := conn.Write(out); werr != nil {
					if !warned && ctx.Err() == nil {
						n.printf("input not delivered while disconnected")
						warned = true
					}
				} else {
					warned = false
				}
			}
			if det {
				close(detached)
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) && ctx.Err() == nil {
				if inputEnded != nil {
					close(inputEnded)
				} else {
					_, _ = conn.Write([]byte{0x04})
				}
			}
			return
		}
	}
}

// eofPoll is how often the delivery of the end of scripted input is reconsidered.
const eofPoll = 100 * time.Millisecond

// eofDelivery delivers the end of scripted input as ctrl-D. Sent while the shell is still
// starting, a ctrl-D is lost (the terminal's line discipline takes it before the shell reads), so
// it is sent once the terminal has printed something and then been quiet for eofSettle (a prompt
// waiting for input), and again after each further eofResend of quiet, at most eofMax times.
// Once the terminal neither ended nor printed for wait after the input ended, tick reports done.
type eofDelivery struct {
	conn       Conn
	wait       time.Duration
	since      time.Time // the input ended (zero: not yet)
	lastOutput time.Time
	sawOutput  bool
	lastSent   time.Time
	sent       int
}

const (
	eofSettle = 300 * time.Millisecond
	eofResend = time.Second
	eofMax    = 5
)

func (d *eofDelivery) begin(now time.Time) { d.since = now }

func (d *eofDelivery) output(now time.Time) { d.sawOutput, d.lastOutput = true, now }

// tick sends ctrl-D when the terminal looks ready; it reports true when the wait is over.
func (d *eofDelivery) tick(now time.Time) bool {
	if d.since.IsZero() {
		return false
	}
	quietSince := d.since
	if d.lastOutput.After(quietSince) {
		quietSince = d.lastOutput
	}
	if now.Sub(quietSince) >= d.wait {
		return true
	}
	ready := d.sawOutput && now.Sub(d.lastOutput) >= eofSettle
	if ready && d.sent < eofMax && (d.sent == 0 || now.Sub(d.lastSent) >= eofResend) {
		if _, err := d.conn.Write([]byte{0x04}); err == nil {
			d.sent++
			d.lastSent = now
		}
	}
	return false
}

// notifier writes sandscope's own notices to stderr on lines of their own.
type notifier struct {
	mu  sync.Mutex
	w   io.Writer
	raw bool
}

func (n *notifier) printf(format string, a ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	// bridge text (reasons, IDs) reaches the terminal only through the sanitiser
	msg := sanitize.Message(fmt.Sprintf(format, a...)).String()
	if n.raw {
		fmt.Fprintf(n.w, "\r\nsandscope: %s\r\n", msg)
		return
	}
	fmt.Fprintf(n.w, "sandscope: %s\n", msg)
}

// leave puts the user's screen back: the main screen if a program left us on the alternate one,
// and the modes a full-screen program turns on.
func (n *notifier) leave(w io.Writer, alt *altTracker) {
	if alt.on {
		_, _ = io.WriteString(w, "\x1b[?1049l")
	}
	_, _ = io.WriteString(w, resetModes)
}

// altTracker remembers whether the output last switched to the alternate screen.
type altTracker struct{ on bool }

var (
	altOn  = [][]byte{[]byte("\x1b[?1049h"), []byte("\x1b[?1047h"), []byte("\x1b[?47h")}
	altOff = [][]byte{[]byte("\x1b[?1049l"), []byte("\x1b[?1047l"), []byte("\x1b[?47l")}
)

func (a *altTracker) scan(p []byte) {
	if bytes.IndexByte(p, 0x1b) < 0 {
		return
	}
	lastOn, lastOff := -1, -1
	for _, s := range altOn {
		lastOn = max(lastOn, bytes.LastIndex(p, s))
	}
	for _, s := range altOff {
		lastOff = max(lastOff, bytes.LastIndex(p, s))
	}
	switch {
	case lastOn > lastOff:
		a.on = true
	case lastOff > lastOn:
		a.on = false
	}
}

func ttyOf(v any) (uintptr, bool) {
	f, ok := v.(interface{ Fd() uintptr })
	if !ok {
		return 0, false
	}
	fd := f.Fd()
	return fd, term.IsTerminal(fd)
}
