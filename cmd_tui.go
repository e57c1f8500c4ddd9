package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/adrg/xdg"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/muesli/termenv"
	"github.com/spf13/cobra"

	"sandscope/client"
	"sandscope/localbridge"
	"sandscope/ui"
)

// runTUI opens the terminal UI: on a remote bridge when one is configured (--url, --context,
// SANDSCOPE_URL), else on a local bridge started in this process with a fresh random token. The
// embedded bridge is shut down on exit, which ends every process and terminal it started.
func runTUI(cmd *cobra.Command, g *globalOptions) error {
	eff, err := resolveSettings(g)
	if err != nil {
		return err
	}
	stateDir := localbridge.DefaultStateDir()
	theme := eff.Theme
	if v := os.Getenv("SANDSCOPE_THEME"); v != "" {
		theme = v
	}
	opts := ui.Options{
		StateDir:     stateDir,
		CacheDir:     filepath.Join(xdg.CacheHome, "sandscope", "logs"),
		Theme:        theme,
		ThemeDir:     filepath.Join(xdg.ConfigHome, "sandscope", "themes"),
		KeyOverrides: eff.Keys,
		WatchFast:    eff.PollFast,
		WatchSlow:    eff.PollSlow,
		LogMemLines:  eff.LogMemoryLines,
		ContextName:  eff.Context,
	}
	var srv *localbridge.Server
	if !eff.Local() {
		ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
		tok, err := eff.Token.Get(ctx)
		cancel()
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("token (%s): %w", eff.Token, err)}
		}
		c, err := client.New(eff.URL, client.WithToken(tok), client.WithUserAgent("sandscope/"+version),
			client.WithRequestTimeout(30*time.Second))
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("bridge %s: %w", safeURL(eff.URL), err)}
		}
		opts.Client, opts.BridgeURL, opts.BridgeLabel = c, eff.URL, safeURL(eff.URL)
	} else {
		tok, err := randomToken()
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		root := filepath.Join(stateDir, "sandboxes")
		srv, err = localbridge.New(localbridge.Config{Root: root, Token: tok})
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("local bridge: %w", err)}
		}
		if err := srv.Start(); err != nil {
			return &exitError{code: 1, err: fmt.Errorf("local bridge: %w", err)}
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := srv.Close(ctx); err != nil {
				fmt.Fprintf(os.Stderr, "sandscope: %v\n", err)
			}
		}()
		c, err := client.New(srv.URL(), client.WithToken(tok), client.WithUserAgent("sandscope/"+version))
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("local bridge client: %w", err)}
		}
		opts.Client = c
		// the embedded bridge's port changes every run; its sandboxes live under root
		opts.BridgeURL = "local:" + root
		opts.BridgeLabel = safeURL(srv.URL()) + " (embedded)"
		opts.Local = true
	}
	if !opts.Local {
		ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
		caps, err := opts.Client.Capabilities(ctx)
		cancel()
		opts.Local = err == nil && caps.Local
	}
	out := termenv.NewOutput(os.Stdout)
	opts.Clipboard = func(s string) error { out.Copy(s); return nil }

	m, err := ui.New(opts)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	defer m.Close()
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithMouseCellMotion(), tea.WithContext(cmd.Context()))
	if _, err := p.Run(); err != nil && err != tea.ErrProgramKilled {
		return &exitError{code: 1, err: fmt.Errorf("tui: %w", err)}
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
