package client

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// BadSandboxID is an entry of a list of sandbox IDs that is not one, with where it was.
type BadSandboxID struct {
	Line int    // 1-based line of the input (0: not from a multi-line input)
	Text string // the entry as given (the caller sanitises it before showing it)
	Why  string
}

func (b BadSandboxID) Error() string {
	if b.Line > 0 {
		return fmt.Sprintf("line %d: %q: %s", b.Line, b.Text, b.Why)
	}
	return fmt.Sprintf("%q: %s", b.Text, b.Why)
}

// maxIDLine bounds one line of an ID list: an ID is at most 128 characters, so a longer line is
// reported, not kept whole.
const maxIDLine = 4096

// ParseSandboxIDs reads sandbox IDs separated by white space (spaces, tabs, newlines), in order
// and without repeats; lines whose first non-blank character is '#' are comments. Entries that are
// not sandbox IDs come back in bad with their line numbers; the rest are usable. err is only a
// read error (what was read before it is returned too).
func ParseSandboxIDs(r io.Reader) (ids []string, bad []BadSandboxID, err error) {
	br := bufio.NewReader(r)
	seen := map[string]bool{}
	for line := 1; ; line++ {
		text, long, rerr := readIDLine(br)
		if t := strings.TrimSpace(text); t != "" && !strings.HasPrefix(t, "#") {
			if long {
				bad = append(bad, BadSandboxID{Line: line, Text: t[:64] + "…", Why: "line too long for sandbox IDs"})
			} else {
				for _, f := range strings.Fields(t) {
					switch {
					case !ValidSandboxID(f):
						bad = append(bad, BadSandboxID{Line: line, Text: f, Why: "not a sandbox ID (1-128 characters of a-z and 2-7)"})
					case !seen[f]:
						seen[f] = true
						ids = append(ids, f)
					}
				}
			}
		}
		if rerr == io.EOF {
			return ids, bad, nil
		}
		if rerr != nil {
			return ids, bad, fmt.Errorf("read sandbox IDs: %w", rerr)
		}
	}
}

// readIDLine reads one line (without its end); long reports a line over maxIDLine, whose rest is
// skipped.
func readIDLine(br *bufio.Reader) (string, bool, error) {
	var b strings.Builder
	long := false
	for {
		frag, isPrefix, err := br.ReadLine()
		if !long {
			b.Write(frag)
			if b.Len() > maxIDLine {
				long = true
			}
		}
		if err != nil || !isPrefix {
			if err == nil && b.Len() == 0 && !long {
				return "", false, nil
			}
			return b.String(), long, err
		}
	}
}
