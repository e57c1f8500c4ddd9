// Package followall is what `logs SANDBOX --all` and the TUI's follow-all log view share: which
// processes of a sandbox are followed (a filter by state and command, each process once, the
// ones that start later joining), and how each is named: a short, stable prefix and a colour
// chosen by a hash of its ID, the same in every run and on both surfaces.
//
// It knows nothing of terminals or Bubble Tea; the callers own the streams.
package followall

import (
	"fmt"
	"hash/fnv"
	"path"
	"regexp"
	"strings"

	"sandscope/client"
	"sandscope/sanitize"
	"sandscope/vocab"
)

// Name is a process's short, stable prefix: its command's name and the first 8 characters of its
// ID ("build-1a2b3c4d"). A shell run as `sh -c SCRIPT NAME` is named by NAME ($0). Only ASCII
// letters, digits, '-', '_' and '.' of the command's name are kept (at most 16).
func Name(p client.Process) string {
	name := ""
	if n := len(p.Command); n > 0 {
		name = path.Base(p.Command[0])
		switch name {
		case "sh", "bash", "dash", "zsh", "ash":
			if n >= 4 && p.Command[1] == "-c" {
				name = path.Base(p.Command[3])
			}
		}
	}
	var b strings.Builder
	for _, r := range name {
		if r < 0x80 && (r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		}
		if b.Len() >= 16 {
			break
		}
	}
	id := client.ShortID(p.ID)
	if b.Len() == 0 {
		return vocab.Text(id)
	}
	return b.String() + "-" + vocab.Text(id)
}

// Summary is a command line for a notice: a shell script shows as "sh -c … NAME", the rest
// elided to 60 characters; sanitised.
func Summary(argv []string) string {
	if len(argv) >= 3 && argv[1] == "-c" {
		switch path.Base(argv[0]) {
		case "sh", "bash", "dash", "zsh", "ash":
			argv = append([]string{argv[0], "-c", "…"}, argv[3:]...)
		}
	}
	return sanitize.Elide(sanitize.Label(strings.Join(argv, " ")), 60).String()
}

// Color is the index of a process's prefix colour among n colours: a hash of its ID, so it is
// the same across runs and between the command line and the TUI (given the same n).
func Color(id string, n int) int {
	if n <= 0 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

// ParseStates reads --state values: running, exited, error, or ended (exited or error). Values
// may be comma-separated. No values: nil (every state).
func ParseStates(vals []string) (map[string]bool, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	m := map[string]bool{}
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			switch s = strings.ToLower(strings.TrimSpace(s)); s {
			case "running", "exited", "error":
				m[s] = true
			case "ended":
				m["exited"], m["error"] = true, true
			default:
				return nil, fmt.Errorf("--state %q: want running, exited, error or ended", s)
			}
		}
	}
	return m, nil
}

// Filter says which processes are followed.
type Filter struct {
	States  map[string]bool // bridge states to keep ("running", "exited", "error"); nil: all
	Pattern *regexp.Regexp  // matched against the command line joined with spaces; nil: all
}

// Keep reports whether p is followed. late says p started while sandscope watched: it was
// running then, whatever it is now.
func (f Filter) Keep(p client.Process, late bool) bool {
	if f.Pattern != nil && !f.Pattern.MatchString(strings.Join(p.Command, " ")) {
		return false
	}
	if f.States == nil {
		return true
	}
	return f.States[p.State] || (late && f.States["running"])
}

// Joiner decides, process by process as they are seen, which ones start being followed: each
// process once, when the filter keeps it.
type Joiner struct {
	Filter Filter
	seen   map[string]bool
}

// Join reports whether p is seen for the first time and kept: the caller then follows it.
func (j *Joiner) Join(p client.Process, late bool) bool {
	if j.seen == nil {
		j.seen = map[string]bool{}
	}
	if j.seen[p.ID] {
		return false
	}
	j.seen[p.ID] = true
	return j.Filter.Keep(p, late)
}

// Seen reports whether a process was seen already (followed or filtered out).
func (j *Joiner) Seen(id string) bool { return j.seen[id] }
