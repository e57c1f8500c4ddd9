package ui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/charmbracelet/lipgloss"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/internal/buildinfo"
	"sandscope/keymap"
	"sandscope/otlpexport"
	"sandscope/record"
	"sandscope/themes"
	"sandscope/ui/common"
	"sandscope/ui/notify"
)

// Options is everything the UI needs from the command line and the config.
type Options struct {
	Target   // the bridge the UI starts on
	StateDir string
	CacheDir string
	// OTLP is the OpenTelemetry export's configuration (Enabled false: nothing is exported). The
	// record of the bridge on screen is exported while the TUI runs, as `sandscope watch` does.
	OTLP otlpexport.Resolved

	Theme        string // "auto", "dark", "light", "high-contrast" or a user theme name
	ThemeDir     string // user themes (<name>.json)
	NoColor      bool
	KeyOverrides map[string][]string
	LogMemLines  int // built log lines kept ready in memory per view (0: the buffer's default)

	// Renderer draws the styles (nil: stdout's renderer, honouring NO_COLOR).
	Styles *themes.Styles
	// Notify chooses the terminal signals (bell, desktop notification) per alert kind; Terminal
	// writes them (nil: the notification list and status line only).
	Notify   notify.Settings
	Terminal TerminalWriter
	// Clipboard copies text on explicit request (nil: OSC 52 to stdout).
	Clipboard common.ClipboardFunc
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// WatchFast/WatchSlow tune the sandbox watcher (zero: client defaults).
	WatchFast, WatchSlow time.Duration

	// DetachKey ends a full-screen attach ("ctrl-]" or a prefix and a key, "ctrl-a d"; empty:
	// ctrl-]). The embedded pane's leave key is the key map's leave_terminal.
	DetachKey string

	// Contexts are the bridges the context switcher offers (the config's contexts, plus the
	// embedded local bridge); Switch opens one. Without Switch the switcher is unavailable.
	Contexts []string
	Switch   SwitchFunc
	// EmbeddedContext is the entry of Contexts that opens the embedded local bridge (the current
	// one while no named context is open on it).
	EmbeddedContext string

	// RecordBudget bounds what the record keeps; WatchBudget bounds background watching and
	// capture (zero values: the record's defaults).
	RecordBudget record.Budget
	WatchBudget  record.WatchBudget
	// Version is sandscope's version (stored with each run in the record, printed in reports); empty
	// is this build's, from internal/buildinfo.
	Version string
	// ReportDir is where the report key writes (default: StateDir/reports).
	ReportDir string

	// Demo, when set, starts the demo scene on the embedded bridge: offered in a dialog on the first
	// run, or started at once.
	Demo *DemoOptions
}

// Target is a bridge the TUI runs on (at start, or after a context switch): its client and how the
// header names it.
type Target struct {
	// Client is the bridge's client. The UI opens the driver on it with driver.Open once the
	// record is open (the stable driver keeps its run index there), so the dialect is told apart
	// by capabilities, in one place, for every bridge; the demo scene uses the client itself.
	Client *client.Client
	// Driver is an open driver (tests); it takes precedence over Client. The UI closes it when
	// it leaves the bridge.
	Driver      driver.Driver
	BridgeLabel string // how the header names the bridge (never holds a token)
	BridgeURL   string // keys the persisted known-sandbox set
	// RecordID is the bridge's identity in the record (record.Identity): the same however the
	// bridge was found. Empty: BridgeURL, normalised. NoRecord: sandscope has never reached this
	// bridge, so it has no identity yet and nothing is recorded.
	RecordID     string
	RecordLegacy []string
	NoRecord     bool
	Local        bool // a sandscope local bridge (its extensions are there)
	ContextName  string
}

// applyTarget points c at t's bridge (its driver is opened by openBridge).
func applyTarget(c *common.Context, t Target) error {
	if t.Driver == nil && t.Client == nil {
		return errors.New("no bridge client")
	}
	label := t.BridgeLabel
	if label == "" {
		label = t.BridgeURL
	}
	c.Driver, c.BridgeLabel, c.BridgeURL = t.Driver, common.SanitizeText(label), t.BridgeURL
	c.Local, c.ContextName = t.Local, common.SanitizeText(t.ContextName)
	c.RecordID, c.RecordLegacy = t.RecordID, t.RecordLegacy
	switch {
	case t.NoRecord:
		c.RecordID = ""
	case c.RecordID == "":
		c.RecordID = record.NormalizeURL(t.BridgeURL)
	}
	return nil
}

// SwitchFunc opens the bridge of a context (one of Options.Contexts). It may take a while (a
// token command); ctx bounds it.
type SwitchFunc func(ctx context.Context, name string) (Target, error)

// DemoOptions start the demo scene in the background; it is cancelled when the TUI quits.
type DemoOptions struct {
	// Offer asks first (the first run on the embedded bridge); false starts it at once.
	Offer bool
	// Start runs the scene until it is set up (ctx ends with the TUI).
	Start func(ctx context.Context) error
	// Decided records the answer so the offer is made only once (nil: nothing recorded).
	Decided func(accepted bool) error
	// Sandbox is the sandbox the scene fills (shown in the status line).
	Sandbox string
}

// backgroundQueryTimeout bounds the auto theme's question to the terminal.
const backgroundQueryTimeout = 300 * time.Millisecond

// newContext builds the shared context from options.
func newContext(ctx context.Context, o Options) (*common.Context, error) {
	keys := keymap.New()
	if len(o.KeyOverrides) > 0 {
		if err := keys.ApplyOverrides(o.KeyOverrides); err != nil {
			return nil, fmt.Errorf("keys: %w", err)
		}
	}
	st := o.Styles
	if st == nil {
		r := themes.NewRenderer(os.Stdout, o.NoColor)
		dark := true
		if o.Theme == "" || o.Theme == "auto" {
			// asked once, before the program takes the terminal, and never for longer than
			// backgroundQueryTimeout (a terminal that does not answer must not stall the start)
			if d, ok := themes.DarkBackground(os.Stdin, os.Stdout, backgroundQueryTimeout); ok {
				dark = d
			}
			r.SetHasDarkBackground(dark)
			// components drawing with lipgloss's default renderer (adaptive colours) must not ask
			// the terminal later, while the program owns it
			lipgloss.SetHasDarkBackground(dark)
		}
		p, err := themes.Load(o.Theme, o.ThemeDir, dark)
		if err != nil {
			return nil, err
		}
		st = themes.New(p, r)
	}
	c := &common.Context{
		Styles:      st,
		Keys:        keys,
		StateDir:    o.StateDir,
		CacheDir:    o.CacheDir,
		Ctx:         ctx,
		Now:         o.Now,
		WatchFast:   o.WatchFast,
		WatchSlow:   o.WatchSlow,
		Clipboard:   o.Clipboard,
		LogMemLines: o.LogMemLines,
		Version:     cmp.Or(o.Version, buildinfo.Version()),
		ReportDir:   o.ReportDir,
	}
	if c.ReportDir == "" && o.StateDir != "" {
		c.ReportDir = filepath.Join(o.StateDir, "reports")
	}
	if err := applyTarget(c, o.Target); err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	return c, nil
}

// BridgeLabelMsg replaces how the header names the bridge at BridgeURL, when that is still the
// bridge on screen (the embedded bridge learns whether it isolates its processes after the TUI
// has started).
type BridgeLabelMsg struct {
	BridgeURL string
	Label     string
}
