package common

import (
	"context"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"sandscope/driver"
	"sandscope/keymap"
	"sandscope/otlpexport"
	"sandscope/record"
	"sandscope/themes"
)

// Component is what every screen and widget offers the root.
type Component interface {
	Init() tea.Cmd
	Update(tea.Msg) (Component, tea.Cmd)
	View() string
	SetSize(width, height int)
	ShortHelp() []key.Binding
	FullHelp() [][]key.Binding
}

// Context is shared by pointer with every component: one per program.
type Context struct {
	Width, Height int // the area the root gives to screens (below the header, above the status)
	Styles        *themes.Styles
	Keys          *keymap.KeyMap
	// Driver is the bridge, whichever API it speaks: screens offer an action only where
	// Features() or one of the driver's optional interfaces (driver.Killer, driver.Sessions, …)
	// says the bridge can do it.
	Driver      driver.Driver
	BridgeLabel string
	BridgeURL   string
	// RecordID is the bridge's identity in the record (see record.Identity; "" with NoRecord);
	// RecordLegacy are names an earlier sandscope kept its record under.
	RecordID     string
	RecordLegacy []string
	Local        bool // the embedded local bridge (stop/replace and sandbox listing available)
	ContextName  string
	StateDir     string // persisted sandscope state (known sandboxes)
	CacheDir     string // log spill files
	// Ctx is the program's lifetime; streams started by screens derive from it.
	Ctx context.Context
	// Now is the clock (fixed in tests).
	Now func() time.Time
	// Watch tunes the sandbox watcher (zero values: client defaults).
	WatchFast, WatchSlow time.Duration
	// LogMemLines is how many built log lines a log view keeps ready in memory (0: the buffer's default).
	LogMemLines int
	// Record is what sandscope observed on this bridge (nil: nothing is recorded, e.g. no state
	// directory); screens read it, Watch feeds it.
	Record *record.Record
	// NotRecorded says why Record is nil, in a few words a screen can show ("no state directory",
	// "this bridge has not answered yet", or the open's error). Empty while recording.
	NotRecorded string
	// Watch watches every known sandbox and captures output in the background (nil with Record).
	Watch *record.Manager
	// Version is sandscope's version (reports).
	Version string
	// ReportDir is where reports are written (absolute).
	ReportDir string
	// Clipboard copies text on explicit request only (nil: unavailable).
	Clipboard ClipboardFunc
	// Export is the OpenTelemetry export of this bridge's record, when one runs: where it
	// stands (the bridge panel shows it). Nil: nothing is exported.
	Export *Export
}

// Export is a running export: where it sends, and its Status (a copy under a lock: cheap on the
// UI goroutine).
type Export struct {
	To     string
	Status func() otlpexport.Status
	// Stop ends the export (it sends what is left for a bounded time) and waits for it.
	Stop func()
}

// Clock returns c.Now() or time.Now when unset.
func (c *Context) Clock() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// BaseCtx returns c.Ctx or a background context when unset.
func (c *Context) BaseCtx() context.Context {
	if c.Ctx != nil {
		return c.Ctx
	}
	return context.Background()
}

// ClipboardFunc writes text to the user's clipboard (OSC 52 through the terminal); set by the root.
type ClipboardFunc func(text string) error
