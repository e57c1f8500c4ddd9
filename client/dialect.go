package client

// Features are what a bridge dialect can do, declared per dialect rather than guessed from
// failures. Callers ask before offering an action or starting a background read.
type Features struct {
	// ProcessList: processes can be listed and looked up by ID (preview only).
	ProcessList bool
	// Cursors: logs and terminals resume from a cursor without loss or duplicates (preview only).
	Cursors bool
	// Kill: a running process can be signalled (preview only).
	Kill bool
	// ConfirmedExits: the bridge reports an ending it observed (exit code and signal) that can
	// be looked up again. On stable an `exit` event is only "reported by the stream": the
	// container may send a completion without an exit code, which the bridge writes as 0.
	ConfirmedExits bool
	// Incarnations: the bridge reports container changes (preview: 404 of old IDs; the local
	// bridge also numbers them). On stable they can only be inferred from sandscope's own marker.
	Incarnations bool
	// TerminalResume: a terminal reconnect continues from a cursor (preview). On stable a
	// reconnect replays the whole ring buffer.
	TerminalResume bool
	// TerminalExit: the bridge says when a terminal's program ended, with its exit code. Stable
	// never does: the end is detected and its code is unknown.
	TerminalExit bool
	// NonWakingLookups: status and list calls about a sandbox do not start its container. On
	// stable every /v1/sandbox/{id}/… request (a 404 included) allocates one.
	NonWakingLookups bool
	// Exec: commands run as one streamed request (POST /exec, stable).
	Exec bool
	// Sessions: named sessions keep cwd and environment between calls (stable).
	Sessions bool
	// SandboxList: the bridge lists its sandboxes (an extension its document announces:
	// sandscope's local bridge, or any bridge that announces the list path).
	SandboxList bool
}

// Features is what the dialect (and, for the local bridge, its extensions) allows.
func (c Capabilities) Features() Features {
	f := Features{SandboxList: c.ListPath != ""}
	switch c.Dialect {
	case DialectStable:
		f.Exec, f.Sessions = true, true
	default: // preview, and unknown documents (treated as preview, as the client always did)
		f.ProcessList, f.Cursors, f.Kill, f.ConfirmedExits = true, true, true, true
		f.Incarnations, f.TerminalResume, f.TerminalExit, f.NonWakingLookups = true, true, true, true
	}
	return f
}

// TermConn is a live terminal connection, whichever dialect carries it: *TerminalConn (preview
// terminals, resumed from cursors) and *PTYConn (stable /pty, replayed from the ring buffer) both
// satisfy it. The embedded pane and full-screen attach take this one type.
type TermConn interface {
	Events() <-chan TermEvent
	Write(p []byte) (int, error)
	Resize(cols, rows int) error
	Close() error
}

var (
	_ TermConn = (*TerminalConn)(nil)
	_ TermConn = (*PTYConn)(nil)
)
