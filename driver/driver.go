// Package driver is the one way sandscope talks to a bridge, whichever API it speaks. Every
// command, screen, the record's watcher and the demo hold a Driver; what only one dialect can do
// is a small optional interface (Killer, Terminals, Sessions, …) checked where the action is
// offered. Nothing above this package asks which dialect a bridge speaks: it asks what the bridge
// can do (Features) and whether the driver offers an interface.
//
// Two drivers exist. The preview driver wraps the client of the 1.0 preview API. The stable driver
// (0.12: POST /exec, GET /pty, sessions) owns what that API lacks: the in-sandbox recorder that
// makes endings confirmable, the run index kept in the record, incarnations inferred from
// sandscope's marker file, and the notice that an action starts a container. On stable every
// request to a sandbox starts its container, so the stable driver answers lookups from the record
// and sends a sandbox request only from Start, Follow of a run that is not live here (Foreground),
// and the optional interfaces the user acts through.
package driver

import (
	"context"
	"time"

	"sandscope/client"
	"sandscope/record"
)

// Run is one process, however the bridge runs it: a preview process, a stable run under the
// recorder. Its State is one of the neutral state words below; Exit is set for an ending with a
// code (confirmed for "exited", as the stream reported it for "reported").
type Run = client.Process

// The state words of a Run. Preview processes use the first three (the bridge's own); the stable
// driver maps its endings onto the same words and adds the ones only it can produce.
const (
	StateRunning = "running"
	StateExited  = "exited" // confirmed ending: Exit holds the code (or signal / timeout)
	StateError   = "error"  // the bridge reported an error ending (Error)
	// StateReported: the stream reported exit code Exit.Code and nothing confirms it (stable: the
	// recorder's status file was not read, or disagrees). Shown "REPORTED n (unconfirmed)".
	StateReported = "reported"
	// StateEnded: the run ended and its code is unknown (stable: the recorder saw it end without a
	// status, e.g. killed). Shown "ENDED exit code unknown".
	StateEnded = "ended"
	// StateInterrupted: the stream broke off and the outcome is not known yet. Shown INTERRUPTED.
	StateInterrupted = "interrupted"
)

// Features are what the bridge can do (client.Features: declared per dialect, not guessed).
type Features = client.Features

// WatchHandle is a running sandbox watcher.
type WatchHandle struct {
	Events     <-chan client.SandboxEvent
	SetFocused func(bool)
	SetSlow    func(time.Duration) // nil: the slow rate is fixed
}

// FollowOptions are the follower's options plus who asked.
type FollowOptions struct {
	client.FollowOptions
	// Background marks a follow nobody on screen asked for (the record's capture of a running
	// process). A driver whose reads wake containers follows only what it already receives (a
	// run it started and still streams) and otherwise closes the channel at once, sending nothing.
	Background bool
	// capture marks the record's own capture (ForRecord sets it): a driver that keeps a run's
	// output in the record itself hands over to it and sends only what it did not keep. Other
	// background followers (a preview pane, follow-all) get the whole run.
	capture bool
}

// StartRequest is what Start runs.
type StartRequest struct {
	client.ExecRequest
	// Session runs it in a named session (drivers with Sessions; "" none).
	Session string
}

// Driver is the core every bridge offers.
type Driver interface {
	// BaseURL is the bridge's URL (no credentials).
	BaseURL() string
	// Capabilities is what the bridge's API document said when the driver was opened.
	Capabilities() client.Capabilities
	// Features is Capabilities().Features(): what the screens and commands may offer.
	Features() Features
	// Health calls GET /health.
	Health(ctx context.Context) error

	// ListSandboxes lists the bridge's sandboxes (an error matching client.ErrUnsupported where
	// the bridge has no list: Features().SandboxList says which).
	ListSandboxes(ctx context.Context) ([]client.SandboxInfo, error)
	// CreateSandbox makes a new sandbox and returns its ID.
	CreateSandbox(ctx context.Context) (string, error)

	// Runs lists a sandbox's runs. Preview asks the bridge; stable answers from the run index
	// sandscope keeps (the runs it started), sending nothing.
	Runs(ctx context.Context, sandbox string) ([]Run, error)
	// Run is one run by ID (client.ErrNotFound when the driver does not know it).
	Run(ctx context.Context, sandbox, id string) (Run, error)
	// Start starts a run and returns it as it stands (State running).
	Start(ctx context.Context, sandbox string, req StartRequest) (Run, error)
	// Follow streams a run's output and what became of it as neutral log events, ending with one
	// final event (Ended, Lost or Failed) before the channel closes (or when ctx ends).
	Follow(ctx context.Context, sandbox, run string, opts FollowOptions) <-chan client.LogEvent
	// Watch reports what changes in a sandbox. On a bridge without NonWakingLookups it sends no
	// request at all: it reports what the driver itself learns (runs started, endings, markers).
	Watch(ctx context.Context, sandbox string, opts client.WatchOptions) WatchHandle

	// Close ends what the driver runs on its own (stable: the readers of runs it started) and
	// waits for them.
	Close() error
}

// Statuses is a sandbox status lookup that starts nothing (preview: GET /running).
type Statuses interface {
	Running(ctx context.Context, sandbox string) (client.RunningStatus, error)
}

// Killer signals a running run.
type Killer interface {
	Kill(ctx context.Context, sandbox, run string, signal int) error
}

// Lifecycle stops, replaces and deletes sandboxes (DeleteSandbox on every preview bridge; stop
// and replace where the bridge offers them, else client.ErrUnsupported).
type Lifecycle interface {
	DeleteSandbox(ctx context.Context, sandbox string) error
	StopSandbox(ctx context.Context, sandbox string) error
	ReplaceSandbox(ctx context.Context, sandbox string) error
}

// Terminals are the bridge's own terminal objects (preview): listed, created, connected to with a
// resume cursor, interrupted and terminated.
type Terminals interface {
	ListTerminals(ctx context.Context, sandbox string) ([]client.Terminal, error)
	CreateTerminal(ctx context.Context, sandbox string, req client.TerminalRequest) (client.Terminal, error)
	ConnectTerminal(ctx context.Context, sandbox, terminal string, opts client.ConnectOptions) (client.TermConn, error)
	InterruptTerminal(ctx context.Context, sandbox, terminal string) error
	TerminateTerminal(ctx context.Context, sandbox, terminal string) error
}

// ShellRequest opens an interactive shell.
type ShellRequest struct {
	Cols, Rows int
	Session    string // drivers with Sessions: the session the shell belongs to ("" none)
	Shell      string // "" the bridge's default
}

// Shells open an interactive shell in a sandbox: preview creates a terminal and connects to it,
// stable connects to the container's PTY (replayed from its ring buffer on reconnect).
type Shells interface {
	OpenShell(ctx context.Context, sandbox string, req ShellRequest) (client.TermConn, error)
}

// Session is a named session sandscope created or used (stable).
type Session struct {
	ID      string
	Created bool // created by sandscope (else only used)
	Seen    time.Time
}

// Sessions are named sessions that keep cwd and environment between runs (stable). Sessions
// answers from what sandscope recorded, sending nothing.
type Sessions interface {
	Sessions(ctx context.Context, sandbox string) ([]Session, error)
	CreateSession(ctx context.Context, sandbox string, opts client.SessionOptions) (string, error)
	DeleteSession(ctx context.Context, sandbox, session string) error
}

// Pool reads the bridge's container pool.
type Pool interface {
	PoolStats(ctx context.Context) (client.PoolStats, error)
}

// Waker is a driver whose sandbox requests start containers (stable). WakeNotice returns, once
// per sandbox, the sentence that tells the user an action will start that sandbox's container
// ("" when it was already said); callers show it before acting.
type Waker interface {
	WakeNotice(sandbox, what string) string
}

// ErrNotLive is returned by a background Follow of a run the driver does not stream itself
// (reading it would wake a container). It is the record's ErrNotFollowed, so the record's
// capture, which cannot import this package, knows it.
var ErrNotLive = record.ErrNotFollowed
