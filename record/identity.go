package record

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sandscope/client"
)

// A bridge has one identity however sandscope found it (embedded, the serve.json discovery file,
// --url, a context), and so one record:
//
//   - sandscope's local bridge keeps an ID of its own in its root and announces it in its
//     capabilities: its identity is "sandscope-bridge:<ID>", the same for the embedded bridge,
//     `sandscope serve` on the same root, and any URL either listens on, across restarts;
//   - any other bridge is its URL, normalised (scheme and host in lower case, default port,
//     credentials, query, fragment and trailing slashes dropped), so spellings of one URL share a
//     record.
//
// The identity learned for a URL is kept beside the records (aliases/), so a report finds the
// record of a bridge that is down now. A bridge sandscope never reached has no identity: nothing is
// recorded for it.

// LocalIdentity is the identity of a sandscope local bridge with this ID.
func LocalIdentity(bridgeID string) string { return "sandscope-bridge:" + bridgeID }

// Identity is the record identity of the bridge at rawURL with these capabilities.
func Identity(caps client.Capabilities, rawURL string) string {
	if caps.BridgeID != "" {
		return LocalIdentity(caps.BridgeID)
	}
	return NormalizeURL(rawURL)
}

// NormalizeURL is the spelling of a bridge URL its record is named by. A URL that does not parse
// is kept as given (trimmed).
func NormalizeURL(raw string) string {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" || strings.Contains(host, ":") {
		host = net.JoinHostPort(host, port)
		host = strings.TrimSuffix(host, ":")
	}
	p := u.EscapedPath()
	if p != "" {
		p = path.Clean("/" + p)
	}
	p = strings.TrimRight(p, "/")
	return scheme + "://" + host + p
}

// aliasFile is where the identity learned for a URL is kept.
func aliasFile(dir, rawURL string) string {
	sum := sha256.Sum256([]byte(NormalizeURL(rawURL)))
	return filepath.Join(dir, "aliases", hex.EncodeToString(sum[:8]))
}

// RememberIdentity keeps the identity learned for a URL (written whole or not at all).
func RememberIdentity(dir, rawURL, identity string) error {
	f := aliasFile(dir, rawURL)
	if got, ok := LookupIdentity(dir, rawURL); ok && got == identity {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
		return fmt.Errorf("record: alias: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(f), ".alias-*")
	if err != nil {
		return fmt.Errorf("record: alias: %w", err)
	}
	_, werr := tmp.WriteString(identity + "\n")
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("record: alias: %w", err)
	}
	if err := os.Rename(tmp.Name(), f); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("record: alias: %w", err)
	}
	return nil
}

// LookupIdentity is the identity last learned for a URL.
func LookupIdentity(dir, rawURL string) (string, bool) {
	b, err := os.ReadFile(aliasFile(dir, rawURL))
	if err != nil {
		return "", false
	}
	id := strings.TrimSpace(string(b))
	if id == "" || strings.ContainsAny(id, "\n\r\x00") {
		return "", false
	}
	return id, true
}

// adoptLegacy gives the record of identity the file an earlier sandscope kept under another name
// for the same bridge (its URL as typed, or "local:<root>"), when the identity has no file yet. It
// returns a notice, or "".
func adoptLegacy(dir, identity string, legacy []string) string {
	dst := FileFor(dir, identity)
	if _, err := os.Stat(dst); err == nil || !errors.Is(err, os.ErrNotExist) {
		return ""
	}
	for _, old := range legacy {
		if old == "" || old == identity {
			continue
		}
		src := FileFor(dir, old)
		if _, err := os.Stat(src); err != nil {
			continue
		}
		for _, suf := range []string{"", "-wal"} {
			if err := os.Rename(src+suf, dst+suf); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Sprintf("the record kept for this bridge under its former name (%s) could not be moved to %s: %v", src, dst, err)
			}
		}
		for _, suf := range []string{"-shm", ".clean", ".lock"} {
			_ = os.Remove(src + suf)
		}
		return fmt.Sprintf("the record kept for this bridge under its former name was moved to %s", dst)
	}
	return ""
}

// readablePath is the file a reader of identity's record opens: its own, else one kept under a
// former name (not moved by a reader).
func readablePath(dir, identity string, legacy []string) string {
	dst := FileFor(dir, identity)
	if _, err := os.Stat(dst); err == nil {
		return dst
	}
	for _, old := range legacy {
		if old == "" {
			continue
		}
		if _, err := os.Stat(FileFor(dir, old)); err == nil {
			return FileFor(dir, old)
		}
	}
	return dst
}

// Exists reports whether the bridge has a record (under its identity or a former name).
func Exists(dir, identity string, legacy []string) bool {
	_, err := os.Stat(readablePath(dir, identity, legacy))
	return err == nil
}
