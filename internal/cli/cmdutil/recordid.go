package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"sandscope/client"
	"sandscope/config"
	"sandscope/localbridge"
	"sandscope/record"
)

// recordName is a bridge's record: its identity (record.Identity), the names an earlier sandscope
// kept it under, and how a report words the bridge's kind.
type recordName struct {
	Identity string
	Legacy   []string
	Kind     string
	RawURL   string // the configured URL ("" for the local bridge found without one)
}

// errNotReached: sandscope has never reached this bridge, so it has no identity and no record.
var errNotReached = errors.New("sandscope has not reached this bridge yet, so it has no record")

// identityTimeout bounds the capability read that tells a bridge's identity.
const identityTimeout = 5 * time.Second

// localRoot is the sandbox root of the local bridge commands find without a URL (serve's default,
// the embedded bridge's).
func localRoot() string { return filepath.Join(localbridge.DefaultStateDir(), "sandboxes") }

// LegacyNames are the names earlier versions kept a bridge's record under: the URL as configured,
// and for the local bridge "local:<root>".
func LegacyNames(rawURL string, local bool) []string {
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

// BridgeIdentity asks the bridge c (at rawURL) who it is: its own ID when it is a sandscope local
// bridge, else its URL, normalised. A bridge that does not answer at all has no identity
// (errNotReached) unless one was learned for its URL before. What it learns is kept for reports.
func BridgeIdentity(ctx context.Context, c *client.Client, rawURL string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, identityTimeout)
	defer cancel()
	caps, err := c.Capabilities(ctx)
	var api *client.APIError
	switch {
	case err == nil:
	case errors.As(err, &api):
		// the bridge answered, without a capability document: it is its URL
	default:
		if id, ok := record.LookupIdentity(RecordDir(), rawURL); ok {
			return id, nil
		}
		return "", errNotReached
	}
	id := record.Identity(caps, rawURL)
	_ = record.RememberIdentity(RecordDir(), rawURL, id)
	return id, nil
}

// writerRecordName is the record of the bridge a command talks to, decided by asking the bridge.
func writerRecordName(ctx context.Context, g *Factory) (recordName, error) {
	c, t, err := g.ResolvedBridge()
	if err != nil {
		return recordName{}, err
	}
	id, err := BridgeIdentity(ctx, c, t.URL)
	if err != nil {
		return recordName{}, err
	}
	n := recordName{Identity: id, Kind: kindOf(id), Legacy: LegacyNames(t.URL, t.Discovered)}
	if !t.Discovered {
		n.RawURL = t.URL
	}
	return n, nil
}

// ReaderRecordName is the record a report reads, found without the bridge where possible: the
// identity learned for the configured URL, or the local bridge's ID in its root; the bridge is
// asked only when neither is known.
func ReaderRecordName(ctx context.Context, g *Factory) (recordName, error) {
	eff, err := ResolveSettings(g)
	if err != nil {
		return recordName{}, err
	}
	if eff.URL != "" {
		n := recordName{RawURL: eff.URL, Legacy: LegacyNames(eff.URL, false)}
		if id, ok := record.LookupIdentity(RecordDir(), eff.URL); ok {
			n.Identity = id
		} else if c, t, err := g.ResolvedBridge(); err == nil {
			if id, err := BridgeIdentity(ctx, c, t.URL); err == nil {
				n.Identity = id
			}
		}
		if n.Identity == "" {
			n.Identity = record.NormalizeURL(eff.URL)
		}
		n.Kind = kindOf(n.Identity)
		return n, nil
	}
	n := recordName{Kind: kindOf(record.LocalIdentity("")), Legacy: LegacyNames("", true)}
	// the `sandscope serve` that commands find through its discovery file (running or not): the
	// identity it answered with
	if d, err := localbridge.ReadDiscovery(filepath.Join(localbridge.DefaultStateDir(), "serve.json")); d.URL != "" && (err == nil || errors.Is(err, localbridge.ErrStaleDiscovery)) {
		if id, ok := record.LookupIdentity(RecordDir(), d.URL); ok {
			n.Identity = id
			return n, nil
		}
	}
	if id, err := localbridge.ReadBridgeID(localRoot()); err == nil && id != "" {
		n.Identity = record.LocalIdentity(id)
		return n, nil
	}
	// a local bridge that never ran over this root: only a record an earlier version kept
	n.Identity = "local:" + localRoot()
	return n, nil
}

// OpenCommandRecord opens, for writing, the record of the bridge a command talks to. A bridge
// sandscope has not reached gets none (nil, nil).
func OpenCommandRecord(g *Factory) (*record.Record, error) {
	return openWriterRecord(g, false)
}

// openWriterRecord is OpenCommandRecord; noFold opens it for a writer that never reads a
// sandbox's state back (record.Options.NoFold).
func openWriterRecord(g *Factory, noFold bool) (*record.Record, error) {
	n, err := writerRecordName(context.Background(), g)
	if errors.Is(err, errNotReached) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	eff, err := ResolveSettings(g)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	return record.Open(record.Options{Dir: RecordDir(), Bridge: n.Identity, Legacy: n.Legacy, Version: Version, NoFold: noFold, Budget: RecordBudget(eff)})
}

// RecordBudget is what a bridge's record keeps as the configuration says (`record:`). Every
// writer of a record prunes it, so every one of them opens it with this budget.
func RecordBudget(eff *config.Effective) record.Budget {
	r := eff.Record
	return record.Budget{MaxAge: r.Keep, MaxEvents: r.MaxEvents, CapturePerRun: r.CapturePerProcess, CaptureTotal: r.CaptureTotal}
}
