package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"sandscope/client"
)

// runBook is what sandscope remembers of a stable bridge, where it cannot ask the bridge without
// starting containers: the runs and sessions it started or used, the container marker it last saw
// per sandbox, and whether it already said that an action starts the container. It is an interface
// so the record can hold it; today it is a JSON file in the state directory (fileBook).
type runBook interface {
	Sandbox(bridge, sandbox string) (bookSandbox, error)
	Update(bridge, sandbox string, f func(*bookSandbox)) error
	Sandboxes(bridge string) ([]string, error)
}

// bookSandbox is what the book knows of one sandbox.
type bookSandbox struct {
	Told        bool          `json:"told"`                  // the "this starts the container" notice was shown
	Incarnation string        `json:"incarnation,omitempty"` // the container marker last seen
	MarkerSeen  time.Time     `json:"markerSeen,omitempty"`
	Runs        []bookRun     `json:"runs,omitempty"`
	Sessions    []bookSession `json:"sessions,omitempty"`
}

// bookRun is one run started here under the recorder.
type bookRun struct {
	ID          string    `json:"id"`
	Argv        []string  `json:"argv"`
	Session     string    `json:"session,omitempty"`
	Started     time.Time `json:"started"`
	Incarnation string    `json:"incarnation,omitempty"`
	State       string    `json:"state"`
	Code        *int      `json:"code,omitempty"` // only when confirmed
	Evidence    string    `json:"evidence,omitempty"`
	Inferred    bool      `json:"inferred,omitempty"`
	Updated     time.Time `json:"updated"`
}

// bookSession is one session created or used here.
type bookSession struct {
	ID      string    `json:"id"`
	Created bool      `json:"created"` // created by sandscope (else only used)
	Seen    time.Time `json:"seen"`
	Deleted bool      `json:"deleted,omitempty"`
}

// maxBookRuns bounds the runs kept per sandbox (oldest dropped).
const maxBookRuns = 200

// fileBook keeps the book in one JSON file, rewritten atomically on each update.
type fileBook struct {
	path string
	mu   sync.Mutex
}

type bookFile struct {
	Bridges map[string]map[string]*bookSandbox `json:"bridges"`
}

func newFileBook(stateDir string) *fileBook {
	return &fileBook{path: filepath.Join(stateDir, "stable-book.json")}
}

func (b *fileBook) load() (*bookFile, error) {
	f := &bookFile{Bridges: map[string]map[string]*bookSandbox{}}
	data, err := os.ReadFile(b.path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stable book: %w", err)
	}
	if err := json.Unmarshal(data, f); err != nil {
		return nil, fmt.Errorf("stable book %s: %w", b.path, err)
	}
	if f.Bridges == nil {
		f.Bridges = map[string]map[string]*bookSandbox{}
	}
	return f, nil
}

func (b *fileBook) Sandbox(bridge, sandbox string) (bookSandbox, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f, err := b.load()
	if err != nil {
		return bookSandbox{}, err
	}
	if sb := f.Bridges[bridge][sandbox]; sb != nil {
		return *sb, nil
	}
	return bookSandbox{}, nil
}

func (b *fileBook) Sandboxes(bridge string) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f, err := b.load()
	if err != nil {
		return nil, err
	}
	var ids []string
	for id := range f.Bridges[bridge] {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

func (b *fileBook) Update(bridge, sandbox string, fn func(*bookSandbox)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	f, err := b.load()
	if err != nil {
		return err
	}
	if f.Bridges[bridge] == nil {
		f.Bridges[bridge] = map[string]*bookSandbox{}
	}
	sb := f.Bridges[bridge][sandbox]
	if sb == nil {
		sb = &bookSandbox{}
		f.Bridges[bridge][sandbox] = sb
	}
	fn(sb)
	if len(sb.Runs) > maxBookRuns {
		sb.Runs = sb.Runs[len(sb.Runs)-maxBookRuns:]
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(b.path), 0o700); err != nil {
		return fmt.Errorf("stable book: %w", err)
	}
	tmp := b.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("stable book: %w", err)
	}
	return os.Rename(tmp, b.path)
}

// setRun records (or updates) a run's state from a result.
func (sb *bookSandbox) setRun(r bookRun, res client.RunResult) {
	r.State, r.Evidence, r.Inferred, r.Updated = string(res.State), res.Evidence, res.Inferred, time.Now().UTC()
	r.Code = nil
	if res.State == client.RunConfirmed {
		code := res.Code
		r.Code = &code
	}
	for i := range sb.Runs {
		if sb.Runs[i].ID == r.ID {
			if r.Incarnation == "" {
				r.Incarnation = sb.Runs[i].Incarnation
			}
			if len(r.Argv) == 0 {
				r.Argv, r.Session, r.Started = sb.Runs[i].Argv, sb.Runs[i].Session, sb.Runs[i].Started
			}
			sb.Runs[i] = r
			return
		}
	}
	sb.Runs = append(sb.Runs, r)
}

// run finds a run by ID or unique prefix.
func (sb *bookSandbox) run(id string) (bookRun, error) {
	var ids []string
	for _, r := range sb.Runs {
		ids = append(ids, r.ID)
	}
	full, err := matchPrefix(id, ids)
	if err != nil {
		return bookRun{}, err
	}
	for _, r := range sb.Runs {
		if r.ID == full {
			return r, nil
		}
	}
	return bookRun{}, errNoMatch
}

// useSession notes a session as created or used here.
func (sb *bookSandbox) useSession(id string, created bool) {
	for i := range sb.Sessions {
		if sb.Sessions[i].ID == id {
			sb.Sessions[i].Seen, sb.Sessions[i].Deleted = time.Now().UTC(), false
			sb.Sessions[i].Created = sb.Sessions[i].Created || created
			return
		}
	}
	sb.Sessions = append(sb.Sessions, bookSession{ID: id, Created: created, Seen: time.Now().UTC()})
}
