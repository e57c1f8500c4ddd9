package root

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"sandscope/client"
	"sandscope/internal/cli/cmdutil"
)

// exampleCommands extracts the sandscope invocations from a help Example: backslash continuations
// joined, comments dropped, each command of a pipeline or list (|, ||, &&, ;) on its own, shell
// redirections and leading VAR=value assignments removed. Words are split the way sh does for
// these simple cases (single and double quotes).
func exampleCommands(t *testing.T, example string) [][]string {
	t.Helper()
	var out [][]string
	text := strings.ReplaceAll(example, "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		words, ok := shellWords(line)
		if !ok {
			t.Errorf("example line with unbalanced quotes: %q", line)
			continue
		}
		var cur []string
		flush := func() {
			for len(cur) > 0 && strings.Contains(cur[0], "=") && !strings.HasPrefix(cur[0], "-") {
				cur = cur[1:] // VAR=value
			}
			if len(cur) > 0 && cur[0] == "sandscope" {
				out = append(out, cur[1:])
			}
			cur = nil
		}
		for i := 0; i < len(words); i++ {
			w := words[i]
			switch {
			case w.op && (w.text == "|" || w.text == "||" || w.text == "&&" || w.text == ";"):
				flush()
			case w.op && w.text == "#":
				i = len(words)
			case w.op: // a redirection: skip its target
				i++
			default:
				cur = append(cur, w.text)
			}
		}
		flush()
	}
	return out
}

type shellWord struct {
	text string
	op   bool // an operator or redirection, not a word
}

// shellWords splits one line into words and operators.
func shellWords(line string) ([]shellWord, bool) {
	var out []shellWord
	var b strings.Builder
	inWord := false
	end := func() {
		if inWord {
			out = append(out, shellWord{text: b.String()})
			b.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			end()
		case c == '\'' || c == '"':
			j := strings.IndexByte(line[i+1:], c)
			if j < 0 {
				return nil, false
			}
			b.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '#' && !inWord:
			out = append(out, shellWord{text: "#", op: true})
			return out, true
		case c == '|' || c == '&' || c == ';' || c == '>' || c == '<':
			if c == '>' && inWord && b.String() == "2" {
				b.Reset()
				inWord = false
			} else {
				end()
			}
			op := string(c)
			for i+1 < len(line) && strings.IndexByte("|&>", line[i+1]) >= 0 {
				i++
				op += string(line[i])
			}
			if op == ">&" || op == "2>&" {
				op = ">"
			}
			out = append(out, shellWord{text: op, op: true})
		default:
			b.WriteByte(c)
			inWord = true
		}
	}
	end()
	return out, true
}

// TestHelpExamplesParse runs every example of every command's help through the real command
// line parser: the command exists, the flags parse, the arguments satisfy the command, and every
// sandbox ID has the bridge's format. An example must run as written.
func TestHelpExamplesParse(t *testing.T) {
	root := NewCmd(&cmdutil.Factory{})
	cmds := []*cobra.Command{root}
	cmds = append(cmds, root.Commands()...)
	total := 0
	for _, c := range cmds {
		for _, args := range exampleCommands(t, c.Example) {
			total++
			r := NewCmd(&cmdutil.Factory{})
			sub, rest, err := r.Find(args)
			if err != nil {
				t.Errorf("%s example %q: %v", c.Name(), args, err)
				continue
			}
			if err := sub.ParseFlags(rest); err != nil {
				t.Errorf("%s example %q: flags: %v", c.Name(), args, err)
				continue
			}
			pos := sub.Flags().Args()
			if err := sub.ValidateArgs(pos); err != nil {
				t.Errorf("%s example %q: arguments: %v", c.Name(), args, err)
				continue
			}
			if sandboxFirst[sub.Name()] && len(pos) > 0 && !client.ValidSandboxID(pos[0]) {
				t.Errorf("%s example %q: sandbox ID %q has not the bridge's format [a-z2-7]{1,128}", c.Name(), args, pos[0])
			}
			if f := sub.Flags().Lookup("sandbox"); f != nil && f.Changed && !client.ValidSandboxID(f.Value.String()) {
				t.Errorf("%s example %q: --sandbox %q has not the bridge's format", c.Name(), args, f.Value.String())
			}
		}
	}
	if total < 20 {
		t.Errorf("only %d example commands found: the extraction is broken", total)
	}
}

func TestExampleCommandsExtraction(t *testing.T) {
	got := exampleCommands(t, `  # comment sandscope nope
  sandscope ls --json myapp | jq -r '.x | .y'
  X=1 sandscope logs a b > out.log 2> err.log
  sandscope exec a -- sh -c 'make 2>&1 | tee x' || echo "failed $?"
  sandscope --url u \
    attach a b`)
	want := [][]string{{"ls", "--json", "myapp"}, {"logs", "a", "b"}, {"exec", "a", "--", "sh", "-c", "make 2>&1 | tee x"}, {"--url", "u", "attach", "a", "b"}}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if strings.Join(got[i], "\x00") != strings.Join(want[i], "\x00") {
			t.Errorf("command %d: got %q, want %q", i, got[i], want[i])
		}
	}
}
