package client_test

import (
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	"sandscope/client"
)

func TestParseSandboxIDs(t *testing.T) {
	in := "abc\nBAD!\ndef\n\n  # a comment\nabc ghi\tjkl\n" + strings.Repeat("a", 129) + "\n" + strings.Repeat("x", 5000) + "\nmno"
	ids, bad, err := client.ParseSandboxIDs(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(ids, ","), "abc,def,ghi,jkl,mno"; got != want {
		t.Errorf("ids = %s, want %s", got, want)
	}
	var lines []int
	for _, b := range bad {
		lines = append(lines, b.Line)
	}
	if len(bad) != 3 || lines[0] != 2 || lines[1] != 7 || lines[2] != 8 {
		t.Fatalf("bad = %+v, want lines 2, 7, 8", bad)
	}
	if !strings.Contains(bad[0].Error(), `line 2: "BAD!"`) {
		t.Errorf("bad[0] = %s", bad[0].Error())
	}
	if len(bad[2].Text) > 80 {
		t.Errorf("a long line is kept whole in the report: %d bytes", len(bad[2].Text))
	}
}

func TestParseSandboxIDsReadError(t *testing.T) {
	boom := errors.New("boom")
	ids, _, err := client.ParseSandboxIDs(iotest.DataErrReader(iotest.ErrReader(boom)))
	if !errors.Is(err, boom) || len(ids) != 0 {
		t.Fatalf("ids %v err %v", ids, err)
	}
	ids, _, err = client.ParseSandboxIDs(strings.NewReader(""))
	if err != nil || len(ids) != 0 {
		t.Fatalf("empty input: %v %v", ids, err)
	}
}
