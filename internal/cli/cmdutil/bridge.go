package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sandscope/client"
	"sandscope/localbridge"
)

// BridgeTarget is the bridge a command talks to and where that choice came from.
type BridgeTarget struct {
	URL       string
	Token     string
	TokenFile string // where the token came from, when it was a file (for hints; never the token)
	Source    string // "--url", "SANDSCOPE_URL", "context NAME", "local bridge (serve.json)"
	// Discovered: the bridge is the local one found through its discovery file (no URL was given)
	Discovered bool
	// NoIsolation is why the local bridge runs processes without namespaces, as its discovery file
	// says ("" when isolated, or not a local bridge found that way)
	NoIsolation string
}

// errNoBridge says no bridge was configured and no local one runs.
var errNoBridge = errors.New("no bridge configured and no local bridge running: start one with `sandscope serve` (or pass --url / set SANDSCOPE_URL)")

// ResolveBridge decides which bridge and token a command uses. The URL comes from the effective
// configuration (--url, --context, SANDSCOPE_URL, the config file's current context — see
// `sandscope config`), else from the local bridge a running `sandscope serve` announced in its
// discovery file. The token comes from --token-file, else SANDBOX_API_KEY, else the context's token
// source, else (local bridge) the bridge's own token file.
func ResolveBridge(g *Factory) (BridgeTarget, error) {
	var t BridgeTarget
	eff, err := ResolveSettings(g)
	if err != nil {
		return t, err
	}
	if eff.URL != "" {
		t.URL, t.Source = eff.URL, eff.URLSource.String()
		if eff.Context != "" {
			t.Source = "context " + eff.Context
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		tok, err := eff.Token.Get(ctx)
		if err != nil {
			return t, err // Get names the token's source
		}
		t.Token = tok
		return t, nil
	}

	path := filepath.Join(localbridge.DefaultStateDir(), "serve.json")
	d, err := localbridge.ReadDiscovery(path)
	if errors.Is(err, localbridge.ErrStaleDiscovery) {
		return t, fmt.Errorf("no bridge configured, and the local bridge %s announced (%s, pid %d) is not running anymore: start one with `sandscope serve` (or pass --url / set SANDSCOPE_URL)", d.URL, path, d.PID)
	}
	if err != nil {
		return t, errNoBridge
	}
	t.URL, t.Source, t.NoIsolation, t.Discovered = d.URL, "local bridge ("+path+")", d.NoIsolation, true
	tok, err := explicitToken(g)
	if err != nil {
		return t, err
	}
	if tok == "" {
		if d.TokenFile == "" {
			return t, fmt.Errorf("local bridge at %s announced no token file", d.URL)
		}
		t.TokenFile = d.TokenFile
		tok, err = readTokenFile(d.TokenFile)
		if err != nil {
			return t, err
		}
	}
	t.Token = tok
	return t, nil
}

// explicitToken is the token given by --token-file or SANDBOX_API_KEY ("" when neither).
func explicitToken(g *Factory) (string, error) {
	if g.TokenFile != "" {
		return readTokenFile(g.TokenFile)
	}
	return strings.TrimSpace(os.Getenv("SANDBOX_API_KEY")), nil
}

// readTokenFile reads a token file: the whole file, surrounding white space trimmed. The token never
// appears in the error.
func readTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	if strings.ContainsAny(tok, "\r\n\x00") {
		return "", fmt.Errorf("token file %s holds more than one line", path)
	}
	return tok, nil
}

// ResolvedBridge is the client this command made for its bridge, made now if it has none yet.
func (g *Factory) ResolvedBridge() (*client.Client, BridgeTarget, error) {
	if g.bridge != nil {
		return g.bridge, g.target, nil
	}
	return NewBridgeClient(g)
}

// NewBridgeClient resolves the bridge and builds a client for it. Failures are usage errors (exit 2).
func NewBridgeClient(g *Factory) (*client.Client, BridgeTarget, error) {
	t, err := ResolveBridge(g)
	if err != nil {
		return nil, t, &ExitError{Code: 2, Err: err}
	}
	c, err := NewClient(t.URL, t.Token)
	if err != nil {
		return nil, t, &ExitError{Code: 2, Err: fmt.Errorf("%s: %w", t.Source, err)}
	}
	g.bridge, g.target = c, t
	return c, t, nil
}

// NewClient is a client for the bridge at url as every sandscope command and the TUI make it: the
// token, sandscope's user agent, and the timeout policy of timeouts.go (the wait for an answer,
// the bound on each non-streaming call).
func NewClient(url, token string) (*client.Client, error) {
	return client.New(url, client.WithToken(token), client.WithUserAgent("sandscope/"+Version),
		client.WithRequestTimeout(callTimeout), client.WithAnswerTimeout(OneShotAnswerWait))
}
