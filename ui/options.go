package ui

import (
	"context"
	"fmt"
	"os"
	"time"

	"sandscope/client"
	"sandscope/keymap"
	"sandscope/themes"
	"sandscope/ui/common"
)

// Options is everything the UI needs from the command line and the config.
type Options struct {
	Client      *client.Client // the bridge client (ignored when Bridge is set)
	Bridge      common.Bridge  // a bridge seam (tests)
	BridgeLabel string         // how the header names the bridge (never holds a token)
	BridgeURL   string         // keys the persisted known-sandbox set
	Local       bool           // the embedded local bridge
	ContextName string
	StateDir    string
	CacheDir    string

	Theme        string // "auto", "dark", "light", "high-contrast" or a user theme name
	ThemeDir     string // user themes (<name>.json)
	NoColor      bool
	KeyOverrides map[string][]string
	LogMemLines  int // log lines kept in memory per view (0: the buffer's default)

	// Renderer draws the styles (nil: stdout's renderer, honouring NO_COLOR).
	Styles *themes.Styles
	// Clipboard copies text on explicit request (nil: OSC 52 to stdout).
	Clipboard common.ClipboardFunc
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// WatchFast/WatchSlow tune the sandbox watcher (zero: client defaults).
	WatchFast, WatchSlow time.Duration
}

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
			dark = r.HasDarkBackground()
		}
		p, err := themes.Load(o.Theme, o.ThemeDir, dark)
		if err != nil {
			return nil, err
		}
		st = themes.New(p, r)
	}
	br := o.Bridge
	if br == nil && o.Client != nil {
		br = common.FromClient(o.Client)
	}
	if br == nil {
		return nil, fmt.Errorf("ui: no bridge client")
	}
	label := o.BridgeLabel
	if label == "" {
		label = o.BridgeURL
	}
	return &common.Context{
		Styles:      st,
		Keys:        keys,
		Bridge:      br,
		BridgeLabel: common.SanitizeText(label),
		BridgeURL:   o.BridgeURL,
		Local:       o.Local,
		ContextName: common.SanitizeText(o.ContextName),
		StateDir:    o.StateDir,
		CacheDir:    o.CacheDir,
		Ctx:         ctx,
		Now:         o.Now,
		WatchFast:   o.WatchFast,
		WatchSlow:   o.WatchSlow,
		Clipboard:   o.Clipboard,
		LogMemLines: o.LogMemLines,
	}, nil
}
