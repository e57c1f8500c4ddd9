package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/localbridge"
	"sandscope/record"
	"sandscope/sanitize"
	"sandscope/vocab"
)

// The one place where a command gets what it talks to: the bridge (bridge.go resolves it), its
// client, the driver for the dialect the bridge speaks, the record, and the I/O streams. Commands
// use only the driver and its optional interfaces; none asks which dialect a bridge speaks.

// connectOptions say how a command treats a bridge that does not answer its first look.
type connectOptions struct {
	op string // what the command is, for messages ("exec", "logs --all")
	// follow: the command is a follower. A bridge that does not answer is told ("still trying")
	// and the command goes on, its follower retrying as it always does; otherwise it ends with
	// noAnswerExit (bridgeFailure's message and hint).
	follow       bool
	noAnswerExit int
	// noAnswer maps the no-answer error itself when set (shell and attach: setupError).
	noAnswer func(error) error
}

// conn is what a command works with: the driver, the bridge it was resolved from, the record the
// driver keeps what it learns in (nil when it needs none) and the command's I/O streams.
type conn struct {
	d      driver.Driver
	target BridgeTarget
	rec    *record.Record
	in     io.Reader
	out    io.Writer
	errOut io.Writer
	g      *globalOptions
}

// connect resolves the bridge, its client, the driver and the record for cmd. A bridge whose
// lookups start containers (Features().NonWakingLookups false) gets its driver the record at
// once: that driver answers lookups from what sandscope recorded there. Other drivers need none,
// and a command records what it observes through its own background record (recorder), opened
// only when there is something to keep.
func (g *globalOptions) connect(ctx context.Context, cmd *cobra.Command, o connectOptions) (*conn, error) {
	streams := conn{in: cmd.InOrStdin(), out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr(), g: g}
	if g.connectHook != nil {
		cn, err := g.connectHook(ctx, o)
		if cn != nil {
			cn.in, cn.out, cn.errOut, cn.g = streams.in, streams.out, streams.errOut, g
		}
		return cn, err
	}
	c, t, err := g.resolvedBridge()
	if err != nil {
		return nil, err
	}
	cn := streams
	cn.target = t
	caps, err := c.Capabilities(ctx)
	switch {
	case errors.Is(err, client.ErrNoAnswer) && !o.follow:
		if o.noAnswer != nil {
			return nil, o.noAnswer(err)
		}
		return nil, bridgeFailure(o.op, err, o.noAnswerExit)
	case errors.Is(err, client.ErrNoAnswer):
		// The follower goes on with the driver of a bridge without a document, as it always did:
		// the client refuses its sandbox calls once it learns the bridge speaks another API.
		stillFollowing(cn.errOut, err)
		cn.d = driver.NewPreview(c, client.Capabilities{})
		return &cn, nil
	case err == nil && !caps.Features().NonWakingLookups:
		cn.rec = g.openDriverRecord(cn.errOut, t.url)
	}
	open := g.openDriver
	if open == nil {
		open = driver.Open
	}
	d, err := open(ctx, c, driver.Options{Record: cn.rec, Notices: cn.errOut})
	if err != nil {
		cn.closeRecord()
		if o.noAnswer != nil {
			return nil, o.noAnswer(err)
		}
		return nil, bridgeFailure(o.op, err, o.noAnswerExit)
	}
	cn.d = d
	return &cn, nil
}

// openDriverRecord opens the record of the bridge for its driver and imports, once, what an
// earlier sandscope kept in stable-book.json under the bridge's URL. A record that cannot be
// opened is told; the driver then keeps what it learns for this command only.
func (g *globalOptions) openDriverRecord(stderr io.Writer, bridgeURL string) *record.Record {
	rec, err := openCommandRecord(g)
	if err != nil {
		fmt.Fprintf(stderr, "sandscope: not recording: %s\n", sanitize.Message(err.Error()))
		return nil
	}
	if rec == nil {
		return nil
	}
	if note, err := rec.ImportStableBook(filepath.Join(localbridge.DefaultStateDir(), "stable-book.json"), bridgeURL); err != nil {
		fmt.Fprintf(stderr, "sandscope: %s\n", sanitize.Message(err.Error()))
	} else if note != "" {
		fmt.Fprintf(stderr, "sandscope: %s\n", sanitize.Message(note))
	}
	return rec
}

// Close ends what the driver runs on its own and commits the record it kept.
func (cn *conn) Close() {
	if cn == nil {
		return
	}
	if cn.d != nil {
		_ = cn.d.Close()
	}
	cn.closeRecord()
}

func (cn *conn) closeRecord() {
	if cn.rec != nil {
		for _, n := range cn.rec.TakeNotices() {
			fmt.Fprintf(cn.errOut, "sandscope: record: %s\n", sanitize.Message(n))
		}
		if err := cn.rec.Close(); err != nil {
			fmt.Fprintf(cn.errOut, "sandscope: record: %s\n", sanitize.Message(err.Error()))
		}
		cn.rec = nil
	}
}

// recorder is the command's background record of what it observes (commandRecord), started when
// recording is wanted and the driver does not keep the record itself (then what the command
// learns is the driver's to record: one bookkeeping, not two). nil records nothing.
func (cn *conn) recorder(noRecord bool) *commandRecord {
	if noRecord || cn.rec != nil || cn.g == nil || cn.g.connectHook != nil {
		return nil
	}
	return startRecording(cn.g, cn.errOut)
}

// wake tells, before the first request of this command to sandbox, that it starts the sandbox's
// container (tellWake).
func (cn *conn) wake(sandbox, what string) { tellWake(cn.d, sandbox, what, cn.errOut) }

// noteIsolation says, on the local bridge found without isolation, that /workspace is a label.
func (cn *conn) noteIsolation() {
	if cn.target.noIsolation != "" {
		fmt.Fprintf(cn.errOut, "sandscope: note: the local bridge runs processes without isolation, so /workspace is only a label (%s)\n", cn.target.noIsolation)
	}
}

// lacks is the exit (2) of a command whose action this bridge's driver does not offer: what
// (e.g. "sessions") and why, in the user's words.
func lacks(what, why string) error {
	return &ExitError{code: exitUsage, err: fmt.Errorf("this bridge has no %s (%s)", what, why)}
}

// sessionsWhy is why a bridge without driver.Sessions has none.
const sessionsWhy = "named sessions that keep cwd and environment between runs are a feature of the stable 0.12 bridge API"

// validSession refuses a session ID the bridge would refuse (exit 2).
func validSession(flag, id string) error {
	if id != "" && !client.ValidSessionID(id) {
		return &ExitError{code: exitUsage, err: fmt.Errorf("%s %q: want 1-128 of a-z A-Z 0-9 . _ - (no \"..\")", flag, vocab.Text(id))}
	}
	return nil
}
