package main

import (
	"strings"
	"testing"
)

// 14a is decided by the worst of the four sizes (two kinds of file, open and closed), and a
// missing figure is a failure, not a pass.
func TestPrunedRowTakesTheWorstSize(t *testing.T) {
	out := []byte(`BenchmarkPrunedSize/incremental-2   1   759406913 ns/op   160.6 MiB-before   85.01 MiB-live   1.135 disk/live-closed   1.136 disk/live-open
BenchmarkPrunedSize/legacy-file-2   1   527018907 ns/op   160.4 MiB-before   85.01 MiB-live   1.301 disk/live-closed   1.134 disk/live-open
`)
	r := prunedRow(row{fig: "14a"}, parseBench(out))
	if r.result != fail || r.ratio != "1.30×" || !strings.Contains(r.value, "legacy-file, closed") {
		t.Errorf("one size over 1.25: %+v", r)
	}
	out = []byte(strings.ReplaceAll(string(out), "1.301", "1.125"))
	if r := prunedRow(row{fig: "14a"}, parseBench(out)); r.result != pass || r.ratio != "1.14×" {
		t.Errorf("all sizes under 1.25: %+v", r)
	}
	out = []byte(strings.ReplaceAll(string(out), "1.125 disk/live-closed", ""))
	if r := prunedRow(row{fig: "14a"}, parseBench(out)); r.result != fail || !strings.Contains(r.note, "disk/live-closed") {
		t.Errorf("a size not reported: %+v", r)
	}
}
