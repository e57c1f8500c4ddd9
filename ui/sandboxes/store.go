package sandboxes

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"sandscope/client"
)

// Known is one remembered sandbox.
type Known struct {
	ID          string    `json:"id"`
	Source      string    `json:"source"` // "created", "added", "opened", "listed"
	AddedAt     time.Time `json:"addedAt"`
	LastSeen    time.Time `json:"lastSeen,omitempty"`
	Running     *bool     `json:"running,omitempty"`
	Incarnation int       `json:"incarnation,omitempty"`
	Inferred    bool      `json:"inferred,omitempty"`
}

type storeFile struct {
	Version   int     `json:"version"`
	Bridge    string  `json:"bridge"`
	Sandboxes []Known `json:"sandboxes"`
}

// Store persists the known set of one bridge as JSON under the state directory, in a file named by
// a hash of the bridge URL.
type Store struct {
	path   string
	bridge string
}

// NewStore returns the store of bridgeURL under stateDir. An empty stateDir disables persistence.
func NewStore(stateDir, bridgeURL string) *Store {
	if stateDir == "" {
		return &Store{bridge: bridgeURL}
	}
	sum := sha256.Sum256([]byte(bridgeURL))
	return &Store{
		path:   filepath.Join(stateDir, "known", hex.EncodeToString(sum[:8])+".json"),
		bridge: bridgeURL,
	}
}

// Path is the file the store uses ("" when persistence is off).
func (s *Store) Path() string { return s.path }

// Load reads the known set; a missing file is an empty set.
func (s *Store) Load() ([]Known, error) {
	if s.path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load known sandboxes: %w", err)
	}
	var f storeFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("load known sandboxes %s: %w", s.path, err)
	}
	out := f.Sandboxes[:0]
	for _, k := range f.Sandboxes {
		if client.ValidSandboxID(k.ID) {
			out = append(out, k)
		}
	}
	return out, nil
}

// Save writes the known set atomically (temp file + rename), readable by the user only.
func (s *Store) Save(known []Known) error {
	if s.path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("save known sandboxes: %w", err)
	}
	data, err := json.MarshalIndent(storeFile{Version: 1, Bridge: s.bridge, Sandboxes: known}, "", "  ")
	if err != nil {
		return fmt.Errorf("save known sandboxes: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".known-*")
	if err != nil {
		return fmt.Errorf("save known sandboxes: %w", err)
	}
	_, werr := tmp.Write(append(data, '\n'))
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), s.path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("save known sandboxes: %w", werr)
	}
	return nil
}
