package localbridge

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// What a bridge keeps in its root, so that a restart is the same bridge with the same sandboxes:
//
//	<root>/bridge-id            the bridge's identity (mode 0600), created once
//	<root>/<id>/sandbox.json    per sandbox: incarnations so far, created and last active times
//	<root>/<id>/workspace/      the sandbox's /workspace
const (
	bridgeIDFile     = "bridge-id"
	sandboxStateFile = "sandbox.json"
	maxBridgeIDFile  = 256 // a valid ID is at most 64 bytes plus a newline
	maxStateFile     = 64 << 10
	maxIncarnations  = 1 << 31 // a larger persisted count is taken for damage
)

// ID is the bridge's persistent identity, kept in <root>/bridge-id and announced as
// info["x-sandscope-bridge-id"] in its OpenAPI document.
func (s *Server) ID() string { return s.id }

// ReadBridgeID reads the identity of the bridge whose root is root, without starting one. The
// root is resolved as New resolves it. An error wraps os.ErrNotExist when no bridge has started
// there yet.
func ReadBridgeID(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("localbridge: root: %w", err)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", fmt.Errorf("localbridge: root: %w", err)
	}
	return readBridgeID(filepath.Join(abs, bridgeIDFile))
}

// readBridgeID reads and checks a bridge-id file.
func readBridgeID(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("localbridge: no bridge ID in %s (a bridge creates %s there when it first starts): %w",
				filepath.Dir(path), bridgeIDFile, fs.ErrNotExist)
		}
		return "", fmt.Errorf("localbridge: bridge ID: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBridgeIDFile+1))
	if err != nil {
		return "", fmt.Errorf("localbridge: bridge ID: %w", err)
	}
	id := strings.TrimSpace(string(data))
	if len(data) > maxBridgeIDFile || !validBridgeID(id) {
		return "", fmt.Errorf("localbridge: bridge ID in %s is malformed (want 8 to 64 of a-z, A-Z, 0-9 and -; remove the file to give the bridge a new identity)", path)
	}
	return id, nil
}

func validBridgeID(id string) bool {
	if len(id) < 8 || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// newBridgeID is 16 random bytes as 26 lowercase base32 characters.
func newBridgeID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])), nil
}

// loadBridgeID reads <root>/bridge-id, creating it first when missing. The new ID is written to a
// temporary file and linked into place, so two bridges starting over one root at once both end up
// with whichever link won.
func loadBridgeID(root string) (string, error) {
	path := filepath.Join(root, bridgeIDFile)
	id, err := readSettledBridgeID(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	fresh, err := newBridgeID()
	if err != nil {
		return "", fmt.Errorf("localbridge: bridge ID: %w", err)
	}
	tmp, err := os.CreateTemp(root, ".bridge-id-*")
	if err != nil {
		return "", fmt.Errorf("localbridge: bridge ID: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(fresh + "\n")
	if werr == nil {
		werr = tmp.Chmod(0o600)
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return "", fmt.Errorf("localbridge: bridge ID: %w", werr)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		// No hard links here: create the file exclusively instead.
		if err := writeExclusive(path, fresh+"\n"); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("localbridge: bridge ID: %w", err)
		}
	}
	// Whoever won the race, the file now holds the one ID.
	return readSettledBridgeID(path)
}

// readSettledBridgeID reads the bridge-id file, giving an exclusive create by another bridge
// (written after it appears) a moment to finish before calling the file malformed.
func readSettledBridgeID(path string) (string, error) {
	for i := 0; ; i++ {
		id, err := readBridgeID(path)
		if err == nil || errors.Is(err, fs.ErrNotExist) || i == 20 {
			return id, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func writeExclusive(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// sandboxState is <root>/<id>/sandbox.json.
type sandboxState struct {
	Incarnations int       `json:"incarnations"`
	CreatedAt    time.Time `json:"createdAt"`
	LastActiveAt time.Time `json:"lastActiveAt"`
}

// saveStateLocked writes the sandbox's sandbox.json (temp file + rename). Called with s.mu held,
// so writes of one sandbox never overtake each other. Failures are logged: the sandbox works on,
// and a restart counts its incarnations from what was last written.
func (s *Server) saveStateLocked(sb *sandbox) {
	data, err := json.Marshal(sandboxState{Incarnations: sb.count, CreatedAt: sb.createdAt.UTC(), LastActiveAt: sb.lastActive.UTC()})
	if err == nil {
		err = writeFileAtomic(filepath.Join(sb.dir, sandboxStateFile), append(data, '\n'))
	}
	if err != nil {
		s.logf("localbridge: sandbox %s: save %s: %v", sb.id, sandboxStateFile, err)
	}
}

// writeFileAtomic replaces path with data through a temporary file in the same directory.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// loadSandboxes registers the sandbox directories already in the root as stopped sandboxes (no
// current incarnation), with their persisted incarnation count, so the next container life
// continues the numbering. Anything else in the root is left alone.
func (s *Server) loadSandboxes() {
	entries, err := os.ReadDir(s.root)
	if err != nil {
		s.logf("localbridge: list sandboxes in %s: %v", s.root, err)
		return
	}
	for _, e := range entries {
		id := e.Name()
		if !e.IsDir() || !validSandboxID(id) {
			continue
		}
		dir := filepath.Join(s.root, id)
		ws := filepath.Join(dir, "workspace")
		if fi, err := os.Lstat(ws); err != nil || !fi.IsDir() {
			continue
		}
		sb := &sandbox{id: id, dir: dir, workspace: ws}
		if fi, err := e.Info(); err == nil {
			sb.createdAt, sb.lastActive = fi.ModTime(), fi.ModTime()
		}
		st, err := readSandboxState(filepath.Join(dir, sandboxStateFile))
		switch {
		case err == nil:
			sb.count = st.Incarnations
			if !st.CreatedAt.IsZero() {
				sb.createdAt = st.CreatedAt
			}
			if !st.LastActiveAt.IsZero() {
				sb.lastActive = st.LastActiveAt
			}
		case errors.Is(err, fs.ErrNotExist):
			// From a version that kept no state: its incarnations are not known.
		default:
			s.logf("localbridge: sandbox %s: %v (its incarnations count from 0)", id, err)
		}
		s.sandboxes[id] = sb
	}
}

func readSandboxState(path string) (sandboxState, error) {
	var st sandboxState
	f, err := os.Open(path)
	if err != nil {
		return st, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStateFile+1))
	if err != nil {
		return st, fmt.Errorf("read %s: %w", sandboxStateFile, err)
	}
	if len(data) > maxStateFile {
		return st, fmt.Errorf("%s is larger than %d bytes", sandboxStateFile, maxStateFile)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return sandboxState{}, fmt.Errorf("%s is damaged: %w", sandboxStateFile, err)
	}
	if st.Incarnations < 0 || st.Incarnations > maxIncarnations {
		return sandboxState{}, fmt.Errorf("%s is damaged: incarnations %d", sandboxStateFile, st.Incarnations)
	}
	return st, nil
}
