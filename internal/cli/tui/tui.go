package tui

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sandscope/internal/cli/cmdutil"
	"sandscope/sanitize"
	"sync"
	"syscall"
	"time"

	"github.com/adrg/xdg"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/muesli/termenv"
	"github.com/spf13/cobra"

	"sandscope/client"
	"sandscope/config"
	"sandscope/demo"
	"sandscope/keymap"
	"sandscope/localbridge"
	"sandscope/record"
	"sandscope/ui"
	"sandscope/ui/notify"
	"sandscope/vocab"
)

// localContextName is how the context switcher names the embedded local bridge.
const localContextName = "local (embedded)"

// firstRunFile records, in the state directory, that the TUI ran and how the demo offer was
// answered, so the offer is made once.
const firstRunFile = "tui-first-run.json"

// rootExample shows the TUI's invocations in the root command's help.
const rootExample = `  sandscope                                   # the TUI on an embedded local bridge (first run offers a demo)
  sandscope --demo                            # the same, starting the demo scene right away
  sandscope --context prod                    # the TUI on a context from the config file
  SANDBOX_API_KEY=... sandscope --url https://bridge.example.workers.dev
  sandscope --url https://bridge.example.workers.dev --token-file ~/.config/sandscope/token

  # in the TUI: ? lists the keys of the screen, C switches context, q quits`

// RegisterTUIFlags adds the TUI's own flags and examples to the root command.
func RegisterTUIFlags(root *cobra.Command) {
	root.Flags().Bool("demo", false, "start the demo scene (sandbox \"demo\") in the background when the TUI opens")
	root.Flags().String("dialect", localbridge.DialectPreview, "API of the embedded local bridge: v1-preview, or stable (the 0.12 API)")
	if root.Example == "" {
		root.Example = rootExample
	}
}

// settings are the UI's options that come from the configuration: theme, keys, polling, log
// memory, the record's budget, the export.
func (o *TUIOptions) settings(stateDir string) ui.Options {
	eff := o.Effective
	return ui.Options{
		OTLP:         o.OTLP,
		StateDir:     stateDir,
		CacheDir:     filepath.Join(xdg.CacheHome, "sandscope", "logs"),
		Theme:        eff.Theme,
		ThemeDir:     cmdutil.UserThemeDir(),
		KeyOverrides: paneKeyOverrides(eff.Keys, eff.DetachKey),
		WatchFast:    eff.PollFast,
		WatchSlow:    eff.PollSlow,
		RecordBudget: cmdutil.RecordBudget(eff),
		LogMemLines:  eff.LogMemoryLines,
		DetachKey:    eff.DetachKey,
		Version:      cmdutil.Version,
	}
}

// Run opens the terminal UI with the options Complete and Validate made.
func (o *TUIOptions) Run(parent context.Context) error {
	cfg, eff, wantDemo := o.Config, o.Effective, o.Demo
	var err error
	stateDir := localbridge.DefaultStateDir()
	opts := o.settings(stateDir)
	emb := &embedded{stateDir: stateDir, dialect: o.Dialect}
	defer emb.close()
	if !eff.Local() {
		t, err := remoteTarget(parent, eff)
		if err != nil {
			return &cmdutil.ExitError{Code: 2, Err: err}
		}
		opts.Target = t
	} else {
		t, err := emb.target()
		if err != nil {
			return &cmdutil.ExitError{Code: 1, Err: err}
		}
		opts.Target = t
	}
	opts.ContextName = eff.Context
	embeddedRun := eff.Local()

	// Contexts: the config's, plus the embedded bridge.
	opts.Contexts = append(cfg.ContextNames(), localContextName)
	opts.EmbeddedContext = localContextName
	opts.Switch = func(ctx context.Context, name string) (ui.Target, error) {
		if name == localContextName {
			return emb.target()
		}
		e, err := cfg.Resolve(config.Flags{Context: name}, os.LookupEnv)
		if err != nil {
			return ui.Target{}, err
		}
		if e.Local() {
			return emb.target()
		}
		return remoteTarget(ctx, e)
	}

	// The demo: started at once with --demo, offered on the embedded bridge's first run.
	marker := filepath.Join(stateDir, firstRunFile)
	_, statErr := os.Stat(marker)
	firstRun := errors.Is(statErr, fs.ErrNotExist)
	if wantDemo || (embeddedRun && firstRun && demoFits(parent, opts.Client)) {
		c, local := opts.Client, opts.Local
		d := &ui.DemoOptions{Offer: !wantDemo, Sandbox: demo.DefaultSandbox}
		d.Start = func(ctx context.Context) error {
			o := demo.Options{}
			if local {
				// the local bridge runs real local processes, so the agent can be this binary
				if exe, err := os.Executable(); err == nil {
					o.Executable = exe
				}
			}
			return demo.Run(ctx, c, o)
		}
		d.Decided = func(accepted bool) error { return writeFirstRun(marker, accepted) }
		opts.Demo = d
	}
	if embeddedRun && firstRun && (opts.Demo == nil || !opts.Demo.Offer) {
		// a first run that asks nothing (--demo) still counts
		_ = writeFirstRun(marker, wantDemo)
	}

	term := newTermOut(os.Stdout)
	out := termenv.NewOutput(term)
	opts.Clipboard = func(s string) error { out.Copy(s); return nil }
	if opts.Notify, err = notify.ParseSettings(eff.Notify); err != nil {
		return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("config %s: %w", eff.ConfigPath, err)}
	}
	opts.Terminal = term.Signal

	m, err := ui.New(opts)
	if err != nil {
		return &cmdutil.ExitError{Code: 2, Err: err}
	}
	defer m.Close()
	// Closing the terminal window (SIGHUP) or a SIGTERM ends the TUI like quitting does: the program
	// stops, and the deferred close of the embedded bridge ends every process and terminal it started.
	ctx, stop, caught := endOnSignal(parent, syscall.SIGHUP, syscall.SIGTERM)
	defer stop()
	watchdog := endAfterSignal(ctx, parent, emb.close)
	defer watchdog()
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithMouseCellMotion(), tea.WithContext(ctx), tea.WithOutput(term))
	if embeddedRun {
		go emb.notifyIsolation(p.Send)
	}
	_, err = p.Run()
	if sig := caught(); sig != nil && parent.Err() == nil {
		// the program was stopped by the signal: that, not "program was killed", is the news
		return &cmdutil.ExitError{Code: 1, Err: errors.New(signalEnding(sig, embeddedRun))}
	}
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return &cmdutil.ExitError{Code: 1, Err: fmt.Errorf("tui: %w", err)}
	}
	return nil
}

// endOnSignal is signal.NotifyContext that also tells which signal ended the context (caught is
// nil until one did).
func endOnSignal(parent context.Context, sigs ...os.Signal) (ctx context.Context, stop func(), caught func() os.Signal) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	var mu sync.Mutex
	var got os.Signal
	go func() {
		select {
		case s := <-ch:
			mu.Lock()
			got = s
			mu.Unlock()
			cancel()
		case <-ctx.Done():
		}
	}()
	stop = func() {
		signal.Stop(ch)
		cancel()
	}
	caught = func() os.Signal {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
	return ctx, stop, caught
}

// signalEnding says why the TUI ended after a signal: the terminal went away (SIGHUP, a closed
// window), or it was asked to stop; and, for the embedded bridge, that its processes ended too.
func signalEnding(sig os.Signal, embedded bool) string {
	s := "ended by " + sig.String()
	if sig == syscall.SIGHUP {
		s = "the terminal went away (SIGHUP): sandscope ended"
	} else if n, ok := sig.(syscall.Signal); ok {
		s = "ended by SIG" + vocab.SignalName(int(n))
	}
	if embedded {
		s += "; every process and terminal of the embedded bridge was ended"
	}
	return s
}

// endAfterSignal guards the shutdown after a signal: if the TUI has not returned 5 s after sig
// ended (a terminal that hung up can block a write), cleanup runs and the process exits. The
// returned func disarms it.
func endAfterSignal(sig, parent context.Context, cleanup func()) func() {
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-sig.Done():
		}
		if parent.Err() != nil {
			return
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cleanup()
			os.Exit(1)
		}
	}()
	return func() { close(done) }
}

// paneKeyOverrides adds the configured detach key as the embedded pane's leave key, unless the
// keys section sets leave_terminal itself. A two-key detach ("ctrl-a d") applies to full-screen
// attach only; the pane keeps its own leave key.
func paneKeyOverrides(keys map[string][]string, detachKey string) map[string][]string {
	out := make(map[string][]string, len(keys)+1)
	for k, v := range keys {
		out[k] = v
	}
	if _, set := out["leave_terminal"]; set {
		return out
	}
	d, err := keymap.ParseDetach(detachKey)
	if err != nil || d.Second != nil {
		return out // a bad detach key is reported by its own check
	}
	out["leave_terminal"] = []string{d.Prefix.Name}
	return out
}

// remoteTarget builds the client for a configured remote bridge and reads its capabilities (5 s
// at most): whether it is a sandscope local bridge, and the API it speaks, which the client keeps
// for the UI's driver.Open (the one place that tells dialects apart).
func remoteTarget(ctx context.Context, eff *config.Effective) (ui.Target, error) {
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	tok, err := eff.Token.Get(tctx)
	cancel()
	if err != nil {
		return ui.Target{}, err // Get names the token's source
	}
	c, err := cmdutil.NewClient(eff.URL, tok)
	if err != nil {
		return ui.Target{}, fmt.Errorf("bridge %s: %w", safeURL(eff.URL), err)
	}
	t := ui.Target{Client: c, BridgeURL: eff.URL, BridgeLabel: safeURL(eff.URL), ContextName: eff.Context, RecordLegacy: cmdutil.LegacyNames(eff.URL, false)}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	caps, err := c.Capabilities(cctx)
	cancel()
	if err == nil {
		t.Local = caps.Local
	}
	// the record's identity: the capabilities just read say it (or the one learned before)
	if t.RecordID, err = cmdutil.BridgeIdentity(ctx, c, eff.URL); err != nil {
		t.NoRecord = true
	}
	return t, nil
}

// embedded is the in-process local bridge, started on first use (at start, or when the context
// switcher picks it) and closed when the TUI exits.
type embedded struct {
	stateDir string
	dialect  string // localbridge.DialectPreview or DialectStable
	mu       sync.Mutex
	srv      *localbridge.Server
	t        ui.Target
	// labelFinal: t's label was made after the namespace probe answered
	labelFinal bool
}

func (e *embedded) target() (ui.Target, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv != nil {
		if !e.labelFinal {
			e.t.BridgeLabel = e.labelLocked()
		}
		return e.t, nil
	}
	tok, err := randomToken()
	if err != nil {
		return ui.Target{}, err
	}
	root := localbridge.DefaultRoot(e.stateDir, e.dialect)
	srv, err := localbridge.New(localbridge.Config{Root: root, Token: tok, Dialect: e.dialect})
	if err != nil {
		return ui.Target{}, fmt.Errorf("local bridge: %w", err)
	}
	if err := srv.Start(); err != nil {
		return ui.Target{}, fmt.Errorf("local bridge: %w", err)
	}
	c, err := cmdutil.NewClient(srv.URL(), tok)
	if err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
		return ui.Target{}, fmt.Errorf("local bridge client: %w", err)
	}
	// the API document, read now (the client keeps it): the UI's driver.Open tells the dialect
	// from it as for any bridge, so --dialect stable gets the stable driver
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_, _ = c.Capabilities(cctx)
	cancel()
	e.srv = srv
	// the embedded bridge's port changes every run; its sandboxes live under root
	e.t = ui.Target{Client: c, BridgeURL: "local:" + root, BridgeLabel: e.labelLocked(), Local: true,
		RecordID: record.LocalIdentity(srv.ID()), RecordLegacy: []string{"local:" + root}}
	return e.t, nil
}

// labelLocked names the embedded bridge in the header. Without isolation /workspace is only a
// label: the name says so. The namespace probe runs in the background while the TUI starts; until
// it answers the name is the bridge alone, and notifyIsolation sends the full one.
func (e *embedded) labelLocked() string {
	label := safeURL(e.srv.URL()) + " (embedded)"
	iso, ok := localbridge.IsolationKnown()
	e.labelFinal = ok
	if ok && !iso.Namespaces {
		label += " · no isolation"
	}
	return label
}

// notifyIsolation waits for the namespace probe and, when the label shown was made before it
// answered and there is no isolation, sends the full label to the TUI.
func (e *embedded) notifyIsolation(send func(tea.Msg)) {
	iso := localbridge.DetectIsolation()
	e.mu.Lock()
	if e.srv == nil || e.labelFinal {
		e.mu.Unlock()
		return
	}
	e.t.BridgeLabel = e.labelLocked()
	msg := ui.BridgeLabelMsg{BridgeURL: e.t.BridgeURL, Label: e.t.BridgeLabel}
	e.mu.Unlock()
	if !iso.Namespaces {
		send(msg)
	}
}

func (e *embedded) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.Close(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "sandscope: %s\n", sanitize.Message(err.Error()))
	}
	e.srv = nil
}

// writeFirstRun records that the TUI ran and the demo answer.
func writeFirstRun(path string, demoAccepted bool) error {
	data, err := json.Marshal(struct {
		At           time.Time `json:"at"`
		DemoAccepted bool      `json:"demoAccepted"`
	}{time.Now().UTC(), demoAccepted})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("first-run record: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("first-run record: %w", err)
	}
	return nil
}

// randomToken makes a one-run token for the embedded bridge; it is never printed or stored.
func randomToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// safeURL drops user info and query from a URL for display (a token must never reach the screen).
func safeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable bridge URL)"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}

// demoFits reports whether the demo scene can run on the bridge: it lists, kills and replaces
// processes, which a bridge without a process list (the stable API) cannot do, so the first run
// there does not offer it. The capabilities were read already (the client keeps them).
func demoFits(ctx context.Context, c *client.Client) bool {
	if c == nil {
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	caps, err := c.Capabilities(cctx)
	return err != nil || caps.Features().ProcessList
}
