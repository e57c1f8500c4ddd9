package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A side-by-side run refuses what it cannot measure before it builds or starts anything.
func TestAgainstRefusesBadInput(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{repo: filepath.Join(wd, "..", ".."), tmp: t.TempDir()}
	for _, c := range []struct {
		rev      string
		names    []string
		rounds   int
		window   time.Duration
		wantText string
	}{
		{"HEAD", nil, 0, time.Second, "--rounds"},
		{"HEAD", nil, 1, time.Millisecond, "--window"},
		{"HEAD", []string{"busy"}, 1, time.Second, `no scenario named "busy"`},
		{"no-such-revision-of-sandscope", nil, 1, time.Second, "not a commit"},
		{"--help", nil, 1, time.Second, "not a commit"},
	} {
		err := runAgainst(e, io.Discard, c.rev, c.names, c.rounds, c.window)
		if err == nil || !strings.Contains(err.Error(), c.wantText) {
			t.Errorf("--against %s %v rounds %d window %v: error %v, want one saying %q", c.rev, c.names, c.rounds, c.window, err, c.wantText)
		}
	}
	if _, err := os.Stat(filepath.Join(e.tmp, "against-src")); err == nil {
		t.Error("refused runs unpacked a revision")
	}
}

// alternate runs the baseline first in even pairs and second in odd ones, and both sides even
// when the first fails, joining their errors.
func TestAlternateOrdersThePairs(t *testing.T) {
	for i, want := range []string{"bm", "mb", "bm", "mb"} {
		var got string
		err := alternate(i, func() error { got += "b"; return nil }, func() error { got += "m"; return nil })
		if got != want || err != nil {
			t.Fatalf("pair %d ran %q (%v), want %q", i, got, err, want)
		}
	}
	errB, errM := errors.New("baseline failed"), errors.New("measured failed")
	var ran int
	err := alternate(1, func() error { ran++; return errB }, func() error { ran++; return errM })
	if ran != 2 || !errors.Is(err, errB) || !errors.Is(err, errM) {
		t.Fatalf("ran %d sides, error %v", ran, err)
	}
}
