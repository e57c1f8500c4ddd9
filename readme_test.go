package main

// README checks: the key table is the one keymap renders, the README opens with the two commands a
// newcomer needs, every subcommand and flag the command line registers is documented, and every
// file the README links to exists.

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	clroot "sandscope/internal/cli/root"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"sandscope/internal/cli/cmdutil"
	"sandscope/keymap"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite README.md's key table from keymap")

const (
	readmePath      = "README.md"
	readmeKeysBegin = "<!-- keys:begin -->"
	readmeKeysEnd   = "<!-- keys:end -->"
)

func readREADME(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatalf("read %s: %v", readmePath, err)
	}
	return strings.ReplaceAll(string(b), "\r\n", "\n")
}

// readmeSection is the text of the "## title" section, up to the next "## " heading.
func readmeSection(t *testing.T, readme, title string) string {
	t.Helper()
	var out []string
	in := false
	for _, l := range strings.Split(readme, "\n") {
		if strings.HasPrefix(l, "## ") {
			if in {
				break
			}
			in = strings.TrimSpace(strings.TrimPrefix(l, "## ")) == title
			continue
		}
		if in {
			out = append(out, l)
		}
	}
	if !in {
		t.Fatalf("README has no %q section", "## "+title)
	}
	return strings.Join(out, "\n")
}

// TestREADMEKeys keeps the key table between the keys markers equal to keymap's Markdown();
// `go test -run TestREADMEKeys -update-readme .` rewrites it.
func TestREADMEKeys(t *testing.T) {
	s := readREADME(t)
	i := strings.Index(s, readmeKeysBegin)
	j := strings.Index(s, readmeKeysEnd)
	if i < 0 || j < i || strings.Count(s, readmeKeysBegin) != 1 || strings.Count(s, readmeKeysEnd) != 1 {
		t.Fatalf("README must hold exactly one %s … %s block", readmeKeysBegin, readmeKeysEnd)
	}
	want := readmeKeysBegin + "\n" + keymap.New().Markdown() + readmeKeysEnd
	got := s[i : j+len(readmeKeysEnd)]
	if got == want {
		return
	}
	if *updateReadme {
		if err := os.WriteFile(readmePath, []byte(s[:i]+want+s[j+len(readmeKeysEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the key table in %s", readmePath)
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for k := 0; k < len(gl) || k < len(wl); k++ {
		var g, w string
		if k < len(gl) {
			g = gl[k]
		}
		if k < len(wl) {
			w = wl[k]
		}
		if g != w {
			t.Errorf("README key table differs from keymap at table line %d:\n README: %q\n keymap: %q", k+1, g, w)
			break
		}
	}
	t.Errorf("README key table is out of date; run: go test -run TestREADMEKeys -update-readme .")
}

// TestREADMEStartsWithCommands checks the opening: a title, a pitch, a screenshot, then the first
// code block of the file, whose first two commands are `go run .` and `go test ./...`.
func TestREADMEStartsWithCommands(t *testing.T) {
	lines := strings.Split(readREADME(t), "\n")
	fence := -1
	sawImage, sawText := false, false
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "```") {
			fence = i
			break
		}
		if strings.HasPrefix(l, "## ") {
			t.Fatalf("line %d: a section (%q) comes before the two commands", i+1, l)
		}
		if strings.HasPrefix(trimmed, "![") {
			sawImage = true
		} else if trimmed != "" && !strings.HasPrefix(trimmed, "#") && !strings.HasPrefix(trimmed, "<!--") {
			sawText = true
		}
	}
	if fence < 0 {
		t.Fatal("README has no code block")
	}
	if !sawText || !sawImage {
		t.Errorf("before the commands the README needs a pitch (text: %v) and a screenshot (image: %v)", sawText, sawImage)
	}
	var cmds []string
	for _, l := range lines[fence+1:] {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			break
		}
		cmd, _, _ := strings.Cut(l, "#")
		if cmd = strings.Join(strings.Fields(cmd), " "); cmd != "" {
			cmds = append(cmds, cmd)
		}
	}
	if len(cmds) < 2 || cmds[0] != "go run ." || cmds[1] != "go test ./..." {
		t.Errorf("the first code block must start with `go run .` then `go test ./...`; it holds %q", cmds)
	}
}

// TestREADMECommandLine checks that the command-line section names every subcommand the root
// registers (as "sandscope PATH") and every flag they accept (as "--name").
func TestREADMECommandLine(t *testing.T) {
	section := readmeSection(t, readREADME(t), "The command line")
	root := clroot.NewCmd(&cmdutil.Factory{})
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()

	checkFlags := func(c *cobra.Command, fs *pflag.FlagSet) {
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			if !strings.Contains(section, "--"+f.Name) {
				t.Errorf("README's command-line section does not mention %s's flag --%s", c.CommandPath(), f.Name)
			}
		})
	}
	checkFlags(root, root.LocalFlags())
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			n++
			if !strings.Contains(section, sub.CommandPath()) {
				t.Errorf("README's command-line section does not mention %q", sub.CommandPath())
			}
			if sub.Name() != "completion" { // cobra's own; its per-shell flags are cobra's business
				checkFlags(sub, sub.LocalFlags())
				walk(sub)
			}
		}
	}
	walk(root)
	if n < 8 {
		t.Errorf("only %d subcommands found; the root should register serve, ls, logs, exec, shell, attach, demo, config", n)
	}
}

var readmeLinkRE = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)[^)]*\)`)

// readmeAnchor is the anchor GitHub gives a heading: lower case, punctuation other than '-' and
// '_' dropped, spaces turned into '-'.
func readmeAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestREADMELinks checks that every relative link and image in the README points to a file or
// folder in the repository, and every in-page link to a heading.
func TestREADMELinks(t *testing.T) {
	readme := readREADME(t)
	anchors := map[string]bool{}
	inFence := false
	for _, l := range strings.Split(readme, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
		}
		if !inFence && strings.HasPrefix(l, "#") {
			anchors[readmeAnchor(strings.TrimLeft(l, "#"))] = true
		}
	}
	for _, m := range readmeLinkRE.FindAllStringSubmatch(readme, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		if a, ok := strings.CutPrefix(target, "#"); ok {
			if !anchors[a] {
				t.Errorf("README links to #%s, but no heading has that anchor", a)
			}
			continue
		}
		target, _, _ = strings.Cut(target, "#")
		if filepath.IsAbs(target) || strings.HasPrefix(filepath.Clean(target), "..") {
			t.Errorf("README link %q leaves the repository", m[1])
			continue
		}
		if _, err := os.Stat(filepath.FromSlash(target)); err != nil {
			t.Errorf("README links to %q, which does not exist: %v", m[1], err)
		}
	}
}
