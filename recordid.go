package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"sandscope/client"
	"sandscope/localbridge"
	"sandscope/record"
)

// recordName is a bridge's record: its identity (record.Identity), the names an earlier sandscope
// kept it under, and how a report words the bridge's kind.
type recordName struct {
	identity string
	legacy   []string
	kind     string
	rawURL   string // the configured URL ("" for the local bridge found without one)
}

// errNotReached: sandscope has never reached this bridge, so it has no identity and no record.
var errNotReached = errors.New("sandscope has not reached this bridge yet, so it has no record")

// identityTimeout bounds the capability read that tells a bridge's identity.
const identityTimeout = 5 * time.Second

// localRoot is the sandbox root of the local bridge commands find without a URL (serve's default,
// the embedded bridge's).
func localRoot() string { return filepath.Join(localbridge.DefaultStateDir(), "sandboxes") }

// legacyNames are the names earlier versions kept a bridge's record under: the URL as configured,
// and for the local bridge "local:<root>".
func legacyNames(rawURL string, local bool) []string {
	var out []string
	if rawURL != "" {
		out = append(out, rawURL)
	}
	if local {
		out = append(out, "local:"+localRoot())
	}
	return out
}

func kindOf(identity string) string {
	if strings.HasPrefix(identity, record.LocalIdentity("")) {
		return "local (embedded or sandscope serve)"
	}
	return "remote"
}

// bridgeIdentity asks the bridge c (at rawURL) who it is: its own ID when it is a sandscope local
// bridge, else its URL, normalised. A bridge that does not answer at all has no identity
// (errNotReached) unless one was learned for its URL before. What it learns is kept for reports.
func bridgeIdentity(ctx context.Context, c *client.Client, rawURL string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, identityTimeout)
	defer cancel()
	caps, err := c.Capabilities(ctx)
	var api *client.APIError
	switch {
	case err == nil:
	case errors.As(err, &api):
		// the bridge answered, without a capability document: it is its URL
	default:
		if id, ok := record.LookupIdentity(recordDir(), rawURL); ok {
			return id, nil
		}
		return "", errNotReached
	}
	id := record.Identity(caps, rawURL)
	_ = record.RememberIdentity(recordDir(), rawURL, id)
	return id, nil
}

// writerRecordName is the record of the bridge a command talks to, decided by asking the bridge.
func writerRecordName(ctx context.Context, g *globalOptions) (recordName, error) {
	c, t, err := g.resolvedBridge()
	if err != nil {
		return recordName{}, err
	}
	id, err := bridgeIdentity(ctx, c, t.url)
	if err != nil {
		return recordName{}, err
	}
	n := recordName{identity: id, kind: kindOf(id), legacy: legacyNames(t.url, t.discovered)}
	if !t.discovered {
		n.rawURL = t.url
	}
	return n, nil
}

// readerRecordName is the record a report reads, found without the bridge where possible: the
// identity learned for the configured URL, or the local bridge's ID in its root; the bridge is
// asked only when neither is known.
func readerRecordName(ctx context.Context, g *globalOptions) (recordName, error) {
	eff, err := resolveSettings(g)
	if err != nil {
		return recordName{}, err
	}
	if eff.URL != "" {
		n := recordName{rawURL: eff.URL, legacy: legacyNames(eff.URL, false)}
		if id, ok := record.LookupIdentity(recordDir(), eff.URL); ok {
			n.identity = id
		} else if c, t, err := g.resolvedBridge(); err == nil {
			if id, err := bridgeIdentity(ctx, c, t.url); err == nil {
				n.identity = id
			}
		}
		if n.identity == "" {
			n.identity = record.NormalizeURL(eff.URL)
		}
		n.kind = kindOf(n.identity)
		return n, nil
	}
	n := recordName{kind: kindOf(record.LocalIdentity("")), legacy: legacyNames("", true)}
	// the `sandscope serve` that commands find through its discovery file (running or not): the
	// identity it answered with
	if d, err := localbridge.ReadDiscovery(filepath.Join(localbridge.DefaultStateDir(), "serve.json")); d.URL != "" && (err == nil || errors.Is(err, localbridge.ErrStaleDiscovery)) {
		if id, ok := record.LookupIdentity(recordDir(), d.URL); ok {
			n.identity = id
			return n, nil
		}
	}
	if id, err := localbridge.ReadBridgeID(localRoot()); err == nil && id != "" {
		n.identity = record.LocalIdentity(id)
		return n, nil
	}
	// a local bridge that never ran over this root: only a record an earlier version kept
	n.identity = "local:" + localRoot()
	return n, nil
}

// openCommandRecord opens, for writing, the record of the bridge a command talks to. A bridge
// sandscope has not reached gets none (nil, nil).
func openCommandRecord(g *globalOptions) (*record.Record, error) {
	n, err := writerRecordName(context.Background(), g)
	if errors.Is(err, errNotReached) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	return record.Open(record.Options{Dir: recordDir(), Bridge: n.identity, Legacy: n.legacy, Version: version})
}
