package main

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
	url       string
	token     string
	tokenFile string // where the token came from, when it was a file (for hints; never the token)
	source    string // "--url", "SANDSCOPE_URL", "context NAME", "local bridge (serve.json)"
	// discovered: the bridge is the local one found through its discovery file (no URL was given)
	discovered bool
	// noIsolation is why the local bridge runs processes without namespaces, as its discovery file
	// says ("" when isolated, or not a local bridge found that way)
	noIsolation string
}

// errNoBridge says no bridge was configured and no local one runs.
var errNoBridge = errors.New("no bridge configured and no local bridge running: start one with `sandscope serve` (or pass --url / set SANDSCOPE_URL)")

// resolveBridge decides which bridge and token a command uses. The URL comes from the effective
// configuration (--url, --context, SANDSCOPE_URL, the config file's current context — see
// `sandscope config`), else from the local bridge a running `sandscope serve` announced in its
// discovery file. The token comes from --token-file, else SANDBOX_API_KEY, else the context's token
// source, else (local bridge) the bridge's own token file.
func resolveBridge(g *globalOptions) (BridgeTarget, error) {
	var t BridgeTarget
	eff, err := resolveSettings(g)
	if err != nil {
		return t, err
	}
	if eff.URL != "" {
		t.url, t.source = eff.URL, eff.URLSource.String()
		if eff.Context != "" {
			t.source = "context " + eff.Context
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		tok, err := eff.Token.Get(ctx)
		if err != nil {
			return t, fmt.Errorf("token (%s): %w", eff.Token, err)
		}
		t.token = tok
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
	t.url, t.source, t.noIsolation, t.discovered = d.URL, "local bridge ("+path+")", d.NoIsolation, true
	tok, err := explicitToken(g)
	if err != nil {
		return t, err
	}
	if tok == "" {
		if d.TokenFile == "" {
			return t, fmt.Errorf("local bridge at %s announced no token file", d.URL)
		}
		t.tokenFile = d.TokenFile
		tok, err = readTokenFile(d.TokenFile)
		if err != nil {
			return t, err
		}
	}
	t.token = tok
	return t, nil
}

// explicitToken is the token given by --token-file or SANDBOX_API_KEY ("" when neither).
func explicitToken(g *globalOptions) (string, error) {
	if g.tokenFile != "" {
		return readTokenFile(g.tokenFile)
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

// resolvedBridge is the client this command made for its bridge, made now if it has none yet.
func (g *globalOptions) resolvedBridge() (*client.Client, BridgeTarget, error) {
	if g.bridge != nil {
		return g.bridge, g.target, nil
	}
	return newBridgeClient(g)
}

// newBridgeClient resolves the bridge and builds a client for it. Failures are usage errors (exit 2).
func newBridgeClient(g *globalOptions) (*client.Client, BridgeTarget, error) {
	t, err := resolveBridge(g)
	if err != nil {
		return nil, t, &ExitError{code: 2, err: err}
	}
	c, err := newClient(t.url, t.token)
	if err != nil {
		return nil, t, &ExitError{code: 2, err: fmt.Errorf("%s: %w", t.source, err)}
	}
	g.bridge, g.target = c, t
	return c, t, nil
}

// newClient is a client for the bridge at url as every sandscope command and the TUI make it: the
// token, sandscope's user agent, and the timeout policy of timeouts.go (the wait for an answer,
// the bound on each non-streaming call).
func newClient(url, token string) (*client.Client, error) {
	return client.New(url, client.WithToken(token), client.WithUserAgent("sandscope/"+version),
		client.WithRequestTimeout(callTimeout), client.WithAnswerTimeout(oneShotAnswerWait))
}
