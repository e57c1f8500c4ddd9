package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"sandscope/client"
	"sandscope/sanitize"
)

// The command line's timeout policy, in one place (the README's "When the bridge does not answer"
// says the same to users).
//
// A bridge can fail in two ways: it refuses connections (nothing listens: every request fails at
// once), or it accepts them and never answers (a stuck bridge, a proxy or another program on the
// port). Without a bound on the wait for an answer the second looks like a hang. So every request
// waits at most an answer wait for the bridge's answer (its headers: a log stream may then last as
// long as it goes on), and:
//
//   - one-shot commands (ls, logs without -f, exec's launch, shell, attach, session, the TUI's
//     calls) wait OneShotAnswerWait, then say the bridge did not answer (naming it and what was
//     asked) and exit: 1, or the command's documented status (exec 255, shell and attach 4);
//   - followers (logs -f, wait, logs --all -f, exec once launched) wait FollowAnswerWait per
//     request, say so on stderr, and retry with backoff (followBackoffMin doubling to
//     followBackoffMax, followRetries attempts in a row), telling when the next attempt is and
//     for how long the bridge has been out; past the budget they exit 4.
const (
	OneShotAnswerWait = 12 * time.Second
	FollowAnswerWait  = 8 * time.Second
	followRetries     = 10
	followBackoffMin  = 100 * time.Millisecond
	followBackoffMax  = 10 * time.Second
	// callTimeout bounds a whole non-streaming call, its answer's body included.
	callTimeout = 30 * time.Second
)

// FollowOptions is the follower policy above applied to opts.
func FollowOptions(opts client.FollowOptions) client.FollowOptions {
	opts.AnswerWait = FollowAnswerWait
	if opts.RetryBudget == 0 {
		opts.RetryBudget, opts.MinBackoff, opts.MaxBackoff = followRetries, followBackoffMin, followBackoffMax
	}
	return opts
}

// FollowContext is ctx for a follower command's own requests (its first look at the bridge and
// the process): they wait FollowAnswerWait, so that a silent bridge is reported that soon.
func FollowContext(ctx context.Context) context.Context {
	return client.WithAnswerWait(ctx, FollowAnswerWait)
}

// noAnswerHint follows the message of a bridge that did not answer.
const noAnswerHint = "is the bridge stuck or overloaded, or is another program listening at that address?"

// BridgeFailure is a one-shot command's exit for a bridge call's error: the no-answer message and
// its hint for a bridge that did not answer, else as BridgeExit maps it.
func BridgeFailure(op string, err error, other int) error {
	if errors.Is(err, client.ErrNoAnswer) {
		if op != "" {
			err = fmt.Errorf("%s: %w", op, err)
		}
		return &ExitError{Code: other, Err: fmt.Errorf("%w; %s", err, noAnswerHint)}
	}
	return BridgeExit(op, err, other)
}

// stillFollowing tells, for a follower whose first look got no answer, that it keeps trying.
func stillFollowing(stderr io.Writer, err error) {
	fmt.Fprintf(stderr, "sandscope: %s; still trying: the follower retries %d times (backoff up to %v, each attempt waiting %v for an answer) before it gives up with exit status 4\n",
		sanitize.Message(err.Error()), followRetries, followBackoffMax, FollowAnswerWait)
}

// DescribeRetry says when a follower's next attempt is made, which one of how many, and for how
// long the bridge has been out: "retrying in 1.6s (attempt 3 of 10; interrupted 25s ago): WHY".
func DescribeRetry(ev client.LogEvent) string {
	s := fmt.Sprintf("retrying in %v (attempt %d", ev.Delay.Round(100*time.Millisecond), ev.Attempt)
	if ev.Budget > 0 {
		s += fmt.Sprintf(" of %d", ev.Budget)
	}
	if !ev.Since.IsZero() {
		s += fmt.Sprintf("; interrupted %v ago", time.Since(ev.Since).Round(time.Second))
	}
	s += ")"
	if ev.Reason != "" {
		s += ": last attempt: " + ev.Reason
	}
	return s
}

// FirstLook runs look, a follower's first lookups; when follow is set and the bridge is out (no
// answer, refused, 5xx), it retries them as the follower would its stream, saying so on stderr.
// It returns look's last error once the retry budget is spent (or ctx ended).
func FirstLook(ctx context.Context, follow bool, stderr io.Writer, look func() error) error {
	var since time.Time
	for attempt := 1; ; attempt++ {
		err := look()
		if err == nil || !follow || !client.IsRetryable(err) || ctx.Err() != nil {
			return err
		}
		if since.IsZero() {
			since = time.Now()
		}
		if attempt > followRetries {
			fmt.Fprintf(stderr, "sandscope: failed: could not reach the bridge after %d attempts over %v\n", followRetries, time.Since(since).Round(time.Second))
			return err
		}
		delay := followBackoffMin << min(attempt-1, 20)
		delay = min(delay, followBackoffMax)
		fmt.Fprintf(stderr, "sandscope: %s\n", sanitize.Message(DescribeRetry(client.LogEvent{
			Kind: client.Reconnecting, Attempt: attempt, Budget: followRetries, Delay: delay, Since: since, Reason: err.Error()})))
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
