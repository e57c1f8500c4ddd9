package keymap

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite the key table in ../README.md")

const (
	readmeBegin = "<!-- keys:begin -->"
	readmeEnd   = "<!-- keys:end -->"
)

// TestReadmeKeyTable keeps the README's key table (between the keys:begin and keys:end markers)
// equal to Markdown(); -update-readme regenerates it. A README without the markers is reported.
func TestReadmeKeyTable(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Skipf("no README: %v", err)
	}
	s := string(data)
	i, j := strings.Index(s, readmeBegin), strings.Index(s, readmeEnd)
	if i < 0 || j < i {
		t.Skipf("README.md has no %s … %s block yet", readmeBegin, readmeEnd)
	}
	want := readmeBegin + "\n" + New().Markdown() + readmeEnd
	got := s[i : j+len(readmeEnd)]
	if got == want {
		return
	}
	if *updateReadme {
		if err := os.WriteFile("../README.md", []byte(s[:i]+want+s[j+len(readmeEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README key table is out of date; run go test ./keymap -run ReadmeKeyTable -update-readme")
}
