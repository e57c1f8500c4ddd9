package cmdutil

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// Signals that end a command that follows something (logs -f, wait, exec, logs --all): Ctrl-C,
// SIGTERM, and SIGHUP (the terminal that ran it closed). Each prints the same notice (the
// resume cursor, or what keeps running) before the command exits.

// signalCause is the cause of a context ended by a signal.
type signalCause struct{ sig os.Signal }

func (s *signalCause) Error() string { return "interrupted by " + s.sig.String() }

// InterruptContext is ctx ended by SIGINT, SIGTERM or SIGHUP; the signal is its cause
// (InterruptStatus). stop releases the signals.
func InterruptContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(&signalCause{sig: s})
		case <-done:
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// InterruptStatus is the exit status of a command its context ended: 129 after SIGHUP (128 + the
// signal's number, as a shell reports it), else 130 (Ctrl-C, SIGTERM).
func InterruptStatus(ctx context.Context) int {
	var sc *signalCause
	if errors.As(context.Cause(ctx), &sc) && sc.sig == syscall.SIGHUP {
		return ExitHangup
	}
	return ExitInterrupt
}
