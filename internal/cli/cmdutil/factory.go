package cmdutil

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

// ConnectOptions say how a command treats a bridge that does not answer its first look.
type ConnectOptions struct {
	Op string // what the command is, for messages ("exec", "logs --all")
	// Follow: the command is a follower. A bridge that does not answer is told ("still trying")
	// and the command goes on, its follower retrying as it always does; otherwise it ends with
	// noAnswerExit (BridgeFailure's message and hint).
	Follow       bool
	NoAnswerExit int
	// NoAnswer maps the no-answer error itself when set (shell and attach: SetupError).
	NoAnswer func(error) error
}

// Conn is what a command works with: the driver, the bridge it was resolved from, the record the
// driver keeps what it learns in (nil when it needs none) and the command's I/O streams.
type Conn struct {
	D      driver.Driver
	Target BridgeTarget
	Rec    *record.Record
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	g      *Factory
}

// Connect resolves the bridge, its client, the driver and the record for cmd. A bridge whose
// lookups start containers (Features().NonWakingLookups false) gets its driver the record at
// once: that driver answers lookups from what sandscope recorded there. Other drivers need none,
// and a command records what it observes through its own background record (recorder), opened
// only when there is something to keep.
func (g *Factory) Connect(ctx context.Context, cmd *cobra.Command, o ConnectOptions) (*Conn, error) {
	return g.ConnectIO(ctx, StreamsOf(cmd), o)
}

// ConnectIO is Connect for a command whose options hold its streams.
func (g *Factory) ConnectIO(ctx context.Context, s IOStreams, o ConnectOptions) (*Conn, error) {
	streams := Conn{In: s.In, Out: s.Out, ErrOut: s.ErrOut, g: g}
	if g.ConnectHook != nil {
		cn, err := g.ConnectHook(ctx, o)
		if cn != nil {
			cn.In, cn.Out, cn.ErrOut, cn.g = streams.In, streams.Out, streams.ErrOut, g
		}
		return cn, err
	}
	c, t, err := g.ResolvedBridge()
	if err != nil {
		return nil, err
	}
	cn := streams
	cn.Target = t
	caps, err := c.Capabilities(ctx)
	switch {
	case errors.Is(err, client.ErrNoAnswer) && !o.Follow:
		if o.NoAnswer != nil {
			return nil, o.NoAnswer(err)
		}
		return nil, BridgeFailure(o.Op, err, o.NoAnswerExit)
	case errors.Is(err, client.ErrNoAnswer):
		// The follower goes on with the driver of a bridge without a document, as it always did:
		// the client refuses its sandbox calls once it learns the bridge speaks another API.
		stillFollowing(cn.ErrOut, err)
		cn.D = driver.NewPreview(c, client.Capabilities{})
		return &cn, nil
	case err == nil && !caps.Features().NonWakingLookups:
		cn.Rec = g.openDriverRecord(cn.ErrOut, t.URL)
	}
	open := g.OpenDriver
	if open == nil {
		open = driver.Open
	}
	d, err := open(ctx, c, driver.Options{Record: cn.Rec, Notices: cn.ErrOut})
	if err != nil {
		cn.closeRecord()
		if o.NoAnswer != nil {
			return nil, o.NoAnswer(err)
		}
		return nil, BridgeFailure(o.Op, err, o.NoAnswerExit)
	}
	cn.D = d
	return &cn, nil
}

// openDriverRecord opens the record of the bridge for its driver and imports, once, what an
// earlier sandscope kept in stable-book.json under the bridge's URL. A record that cannot be
// opened is told; the driver then keeps what it learns for this command only.
func (g *Factory) openDriverRecord(stderr io.Writer, bridgeURL string) *record.Record {
	rec, err := OpenCommandRecord(g)
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
func (cn *Conn) Close() {
	if cn == nil {
		return
	}
	if cn.D != nil {
		_ = cn.D.Close()
	}
	cn.closeRecord()
}

func (cn *Conn) closeRecord() {
	if cn.Rec != nil {
		for _, n := range cn.Rec.TakeNotices() {
			fmt.Fprintf(cn.ErrOut, "sandscope: record: %s\n", sanitize.Message(n))
		}
		if err := cn.Rec.Close(); err != nil {
			fmt.Fprintf(cn.ErrOut, "sandscope: record: %s\n", sanitize.Message(err.Error()))
		}
		cn.Rec = nil
	}
}

// Recorder is the command's background record of what it observes (commandRecord), started when
// recording is wanted and the driver does not keep the record itself (then what the command
// learns is the driver's to record: one bookkeeping, not two). nil records nothing.
func (cn *Conn) Recorder(noRecord bool) *CommandRecord {
	if noRecord || cn.Rec != nil || cn.g == nil || cn.g.ConnectHook != nil {
		return nil
	}
	return startRecording(cn.g, cn.ErrOut)
}

// Wake tells, before the first request of this command to sandbox, that it starts the sandbox's
// container (TellWake).
func (cn *Conn) Wake(sandbox, what string) { TellWake(cn.D, sandbox, what, cn.ErrOut) }

// NoteIsolation says, on the local bridge found without isolation, that /workspace is a label.
func (cn *Conn) NoteIsolation() {
	if cn.Target.NoIsolation != "" {
		fmt.Fprintf(cn.ErrOut, "sandscope: note: the local bridge runs processes without isolation, so /workspace is only a label (%s)\n", cn.Target.NoIsolation)
	}
}

// Lacks is the exit (2) of a command whose action this bridge's driver does not offer: what
// (e.g. "sessions") and why, in the user's words.
func Lacks(what, why string) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf("this bridge has no %s (%s)", what, why)}
}

// SessionsWhy is why a bridge without driver.Sessions has none.
const SessionsWhy = "named sessions that keep cwd and environment between runs are a feature of the stable 0.12 bridge API"

// ValidSession refuses a session ID the bridge would refuse (exit 2).
func ValidSession(flag, id string) error {
	if id != "" && !client.ValidSessionID(id) {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("%s %q: want 1-128 of a-z A-Z 0-9 . _ - (no \"..\")", flag, vocab.Text(id))}
	}
	return nil
}
