package localbridge

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/adrg/xdg"
)

// LoadOrCreateToken returns the token stored at path, creating a random one (mode 0600) when the
// file is missing or empty. Callers that honour SANDBOX_API_KEY check it before calling this.
func LoadOrCreateToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if tok := strings.TrimSpace(string(b)); tok != "" {
			return tok, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read token file: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create token directory: %w", err)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	tok := hex.EncodeToString(raw[:])
	tmp, err := os.CreateTemp(filepath.Dir(path), ".token-*")
	if err != nil {
		return "", fmt.Errorf("write token file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write token file: %w", err)
	}
	if _, err := tmp.WriteString(tok + "\n"); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write token file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write token file: %w", err)
	}
	// Another process may have created the file meanwhile; the first one wins.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return LoadOrCreateToken(path)
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			return "", fmt.Errorf("write token file: %w", err)
		}
	}
	return tok, nil
}

// Discovery is what `sandscope serve` publishes so other sandscope commands find it.
type Discovery struct {
	URL       string `json:"url"`
	TokenFile string `json:"tokenFile"`
	PID       int    `json:"pid"`
	// NoIsolation says why the bridge runs processes without namespaces ("" when it isolates
	// them): commands show it, since /workspace is then only a label.
	NoIsolation string `json:"noIsolation,omitempty"`
}

// ErrStaleDiscovery means the discovery file names a process that is no longer running.
var ErrStaleDiscovery = errors.New("discovery file is stale: its server is not running")

// WriteDiscovery writes d to path (mode 0600, atomically).
func WriteDiscovery(path string, d Discovery) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("write discovery: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write discovery: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".serve-*")
	if err != nil {
		return fmt.Errorf("write discovery: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("write discovery: %w", werr)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write discovery: %w", err)
	}
	return nil
}

// ReadDiscovery reads a discovery file and checks that its PID is alive (ErrStaleDiscovery if not).
func ReadDiscovery(path string) (Discovery, error) {
	var d Discovery
	b, err := os.ReadFile(path)
	if err != nil {
		return d, fmt.Errorf("read discovery: %w", err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return Discovery{}, fmt.Errorf("read discovery %s: %w", path, err)
	}
	if d.URL == "" || d.PID <= 0 {
		return Discovery{}, fmt.Errorf("read discovery %s: missing url or pid", path)
	}
	if err := syscall.Kill(d.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return d, fmt.Errorf("read discovery %s: %w", path, ErrStaleDiscovery)
	}
	return d, nil
}

// DefaultStateDir is $XDG_STATE_HOME/sandscope (token file, discovery file).
func DefaultStateDir() string {
	if v := os.Getenv("XDG_STATE_HOME"); v != "" && filepath.IsAbs(v) {
		return filepath.Join(v, "sandscope")
	}
	return filepath.Join(xdg.StateHome, "sandscope")
}
