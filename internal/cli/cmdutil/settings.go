package cmdutil

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sandscope/config"
	"sandscope/keymap"
	"sandscope/themes"
	"sort"
	"strings"

	"github.com/adrg/xdg"
)

// The effective settings every command reads (flags, environment, the config file).

// ResolveSettings loads the configuration file and resolves the effective settings from it, the
// environment and the global flags. Every command that talks to a bridge starts here; the token is
// obtained separately with eff.Token.Get(ctx), only when needed.
func ResolveSettings(g *Factory) (*config.Effective, error) {
	_, eff, err := LoadSettings(g)
	return eff, err
}

// LoadSettings is ResolveSettings that also returns the loaded file (its contexts, for the TUI).
func LoadSettings(g *Factory) (*config.Config, *config.Effective, error) {
	path := config.DefaultPath(os.LookupEnv)
	cfg, err := config.Load(path)
	if cfg == nil {
		return nil, nil, &ExitError{Code: 2, Err: err}
	}
	// every problem of the file at once, in line order: the file's own, then its keys'
	if err := fileErrors(err, cfg.CheckKeys(keymap.New().Names()), keyErrors(cfg)); err != nil {
		return nil, nil, &ExitError{Code: 2, Err: err}
	}
	eff, err := cfg.Resolve(config.Flags{URL: g.URL, TokenFile: g.TokenFile, Context: g.Context}, os.LookupEnv)
	if err != nil {
		for _, u := range []struct{ where, raw string }{{"--url", g.URL}, {"SANDSCOPE_URL", os.Getenv("SANDSCOPE_URL")}} {
			if fix := schemeless(u.raw); fix != "" {
				err = fmt.Errorf("%s %s has no scheme: a bridge URL starts with http:// or https://; did you mean %s?", u.where, u.raw, fix)
				break
			}
		}
		return nil, nil, &ExitError{Code: 2, Err: err}
	}
	return cfg, eff, nil
}

// keyErrors checks the file's key overrides as the TUI applies them (notation, clashes within a
// screen), each problem at the line of the binding it names (unknown names are CheckKeys').
func keyErrors(cfg *config.Config) error {
	km := keymap.New()
	known := map[string]bool{}
	for _, n := range km.Names() {
		known[n] = true
	}
	var errs []error
	for _, p := range km.Check(cfg.Keys) {
		if !known[p.Name] {
			continue
		}
		at := "keys." + p.Name
		if p.Other != "" && cfg.Line("keys."+p.Other) > cfg.Line(at) {
			at = "keys." + p.Other // the later of two overrides made the clash
		}
		errs = append(errs, cfg.ErrorAt(at, fmt.Sprintf("keys.%s: %v", p.Name, p.Err)))
	}
	return errors.Join(errs...)
}

// fileErrors joins problems of one configuration file, each on its own, ordered by line.
func fileErrors(errs ...error) error {
	var all []error
	var flat func(err error)
	flat = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				flat(e)
			}
			return
		}
		if err != nil {
			all = append(all, err)
		}
	}
	for _, err := range errs {
		flat(err)
	}
	line := func(err error) int {
		var ce *config.Error
		if errors.As(err, &ce) {
			return ce.Line
		}
		return 0
	}
	sort.SliceStable(all, func(i, j int) bool { return line(all[i]) < line(all[j]) })
	return errors.Join(all...)
}

// UserThemeDir holds the user's themes (<name>.json), which the TUI prefers to built-in ones.
func UserThemeDir() string { return filepath.Join(xdg.ConfigHome, "sandscope", "themes") }

// CheckTheme loads the effective theme the way the TUI does (both palettes for auto, which picks
// by the terminal's background), so a theme the TUI would refuse is refused here too.
func CheckTheme(cfg *config.Config, eff *config.Effective) error {
	names := []string{eff.Theme}
	if eff.Theme == "" || eff.Theme == "auto" {
		names = []string{"dark", "light"}
	}
	for _, n := range names {
		if _, err := themes.Load(n, UserThemeDir(), true); err != nil {
			msg := fmt.Sprintf("theme %q: %v", eff.Theme, err)
			if eff.ThemeSource.Kind == config.FromFile {
				return cfg.ErrorAt("theme", msg)
			}
			return fmt.Errorf("%s: %s", eff.ThemeSource, msg)
		}
	}
	return nil
}

// schemeless is raw with http:// in front when raw is a host and port (or a host) written without
// a scheme ("127.0.0.1:7681", "localhost:7681/bridge"), else "". Nothing that could hold a secret
// (user:password@, a query) is echoed.
func schemeless(raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" || strings.Contains(raw, "://") || strings.ContainsAny(raw, "@?# \t") {
		return ""
	}
	u, err := url.Parse("http://" + raw)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return ""
	}
	return "http://" + raw
}
