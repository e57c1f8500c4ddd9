package logbuf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/sanitize"
)

func newBuf(t *testing.T, o Options) *Buffer {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func texts(ls []Line) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Text)
	}
	return out
}

func TestLinesCursorsAndTimes(t *testing.T) {
	b := newBuf(t, Options{})
	b.AddData("", client.Stdout, []byte("one\ntw"), "c1", at(1))
	if b.Len() != 2 || b.Partials() != 1 {
		t.Fatalf("len %d partials %d", b.Len(), b.Partials())
	}
	p, _ := b.Line(1)
	if !p.Partial || p.Text != "tw" || p.Cursor != "c1" || !p.Time.Equal(at(1)) {
		t.Fatalf("partial %+v", p)
	}
	b.AddData("", client.Stdout, []byte("o\nthree\n"), "c2", at(2))
	ls := b.Lines(0, 10)
	if got := strings.Join(texts(ls), "|"); got != "one|two|three" {
		t.Fatalf("lines %q", got)
	}
	// "two" began in chunk c1 and was completed by c2.
	if ls[1].Cursor != "c2" || !ls[1].Time.Equal(at(1)) || ls[1].Partial {
		t.Errorf("two: %+v", ls[1])
	}
	if ls[2].Cursor != "c2" || !ls[2].Time.Equal(at(2)) {
		t.Errorf("three: %+v", ls[2])
	}
	if b.Partials() != 0 {
		t.Errorf("partials %d", b.Partials())
	}
}

func TestMarkersAndPartials(t *testing.T) {
	b := newBuf(t, Options{})
	b.AddData("", client.Stdout, []byte("abc"), "c1", at(1))
	// Interrupted promises continuity: placed before the partial line, which keeps growing.
	b.Append("", client.LogEvent{Kind: client.Interrupted, Cursor: "c1", Time: at(2), Reason: "connection reset"})
	b.Append("", client.LogEvent{Kind: client.Reconnecting, Cursor: "c1", Attempt: 1})
	b.Append("", client.LogEvent{Kind: client.Resumed, Cursor: "c1", Attempt: 1})
	b.AddData("", client.Stdout, []byte("def\nxy"), "c2", at(3))
	// Gap breaks the stream: the partial "xy" ends first.
	b.Append("", client.LogEvent{Kind: client.Gap, Cursor: "c2", Gap: &client.GapInfo{Reason: client.GapTruncated, Bytes: 10}})
	b.AddData("", client.Stdout, []byte("z\n"), "c3", at(4))
	ls := b.Lines(0, 100)
	var got []string
	for _, l := range ls {
		got = append(got, fmt.Sprintf("%s:%s", l.Kind, l.Text))
	}
	want := []string{
		"interrupted:INTERRUPTED: connection reset",
		"resumed:RESUMED after 1 attempt, no gap",
		"output:abcdef",
		"output:xy",
		"gap:GAP: output evicted by the bridge (10 bytes missing)",
		"output:z",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !ls[3].NoEOL || ls[2].NoEOL {
		t.Errorf("NoEOL flags: %v %v", ls[2].NoEOL, ls[3].NoEOL)
	}
	if b.Markers() != 3 {
		t.Errorf("markers %d", b.Markers())
	}
	if got := b.NextMarker(2, Forward); got != 4 {
		t.Errorf("next marker forward from 2 = %d", got)
	}
	if got := b.NextMarker(3, Backward); got != 1 {
		t.Errorf("next marker backward from 3 = %d", got)
	}
	if got := b.NextMarker(5, Forward); got != -1 {
		t.Errorf("no marker after 5, got %d", got)
	}
	if got := b.NextMarker(4, Backward); got != 4 {
		t.Errorf("marker at 4 backward = %d", got)
	}
}

func TestEndedFlushesAndDescribes(t *testing.T) {
	b := newBuf(t, Options{})
	b.AddData("p1", client.Stdout, []byte("no newline"), "c1", at(1))
	b.AddData("p1", client.Stderr, []byte("err partial"), "c2", at(2))
	b.AddData("p2", client.Stdout, []byte("other"), "c3", at(3))
	b.Append("p1", client.LogEvent{Kind: client.Ended, Cursor: "c3", Status: &client.Process{State: "exited", Exit: &client.Exit{Code: 3}}})
	ls := b.Lines(0, 10)
	got := texts(ls)
	want := []string{"no newline", "err partial", "ENDED: EXITED 3", "other"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q want %q", got, want)
	}
	if ls[1].Stream != client.Stderr || ls[0].Source != "p1" || !ls[3].Partial || ls[3].Source != "p2" {
		t.Errorf("entries %+v", ls)
	}
	if d := Describe(client.LogEvent{Kind: client.Lost, Loss: &client.LossEvidence{Lookup: "GET process: 404", Incarnation: 3, Previous: 2, Inferred: true}}); d != "LOST: the process is gone (GET process: 404; sandbox now in incarnation 3 (was 2), inferred)" {
		t.Errorf("lost: %q", d)
	}
	if d := Describe(client.LogEvent{Kind: client.Ended, Status: &client.Process{Exit: &client.Exit{Code: 137, Signal: 9}}}); d != "ENDED: KILLED KILL (exit 137)" {
		t.Errorf("killed: %q", d)
	}
}

func TestPartialReorderAcrossSources(t *testing.T) {
	b := newBuf(t, Options{})
	b.AddData("a", client.Stdout, []byte("a1"), "", at(1))
	b.AddData("b", client.Stdout, []byte("b1"), "", at(2))
	if got := texts(b.Lines(0, 5)); strings.Join(got, "|") != "a1|b1" {
		t.Fatalf("partials %q", got)
	}
	b.AddData("b", client.Stdout, []byte("!\n"), "", at(3))
	ls := b.Lines(0, 5)
	if got := texts(ls); strings.Join(got, "|") != "b1!|a1" || ls[0].Partial || !ls[1].Partial {
		t.Fatalf("after b completes: %+v", ls)
	}
	b.EndPartial()
	if b.Partials() != 0 || b.Len() != 2 {
		t.Fatalf("EndPartial left %d partials, len %d", b.Partials(), b.Len())
	}
}

func TestMarkerTextSanitised(t *testing.T) {
	b := newBuf(t, Options{})
	b.AddMarker("", Note, "evil\x1b]52;c;AAAA\x07\x1b[31mred\nx", "", at(1))
	l, _ := b.Line(0)
	if l.Text != "evilred^Jx" || l.Kind != Note {
		t.Fatalf("marker %+v", l)
	}
}

// smallBlocks makes raw files write every 512 bytes, so that tests read most lines back from disk.
func smallBlocks(t *testing.T) {
	old := rawBlock
	rawBlock = 512
	t.Cleanup(func() { rawBlock = old })
}

// spillFixture fills a small-memory buffer so most entries are on disk.
func spillFixture(t *testing.T) (*Buffer, []string, []byte, []byte) {
	smallBlocks(t)
	b := newBuf(t, Options{MemLines: 64, Sanitize: sanitize.Options{MaxRunes: 20}})
	var want []string
	var out, errb bytes.Buffer
	for i := 0; i < 1000; i++ {
		switch {
		case i%97 == 5:
			b.AddMarker("", Note, fmt.Sprintf("note %d", i), fmt.Sprintf("c%d", i), at(i))
			want = append(want, fmt.Sprintf("note %d", i))
		case i%10 == 3:
			line := fmt.Sprintf("\x1b[1merr %d\x1b[0m\n", i)
			errb.WriteString(line)
			b.AddData("", client.Stderr, []byte(line), fmt.Sprintf("c%d", i), at(i))
			want = append(want, fmt.Sprintf("\x1b[1merr %d\x1b[0m", i))
		case i == 500:
			line := "a very long line that is capped for display " + strings.Repeat("x", 100) + "\n"
			out.WriteString(line)
			b.AddData("", client.Stdout, []byte(line), "c500", at(i))
			want = append(want, "a very long line tha")
		default:
			line := fmt.Sprintf("Line number %d here\n", i)
			// split across two chunks to exercise partial lines
			out.WriteString(line)
			b.AddData("", client.Stdout, []byte(line[:7]), fmt.Sprintf("c%da", i), at(i))
			b.AddData("", client.Stdout, []byte(line[7:]), fmt.Sprintf("c%d", i), at(i))
			want = append(want, strings.TrimSuffix(line, "\n"))
		}
	}
	return b, want, out.Bytes(), errb.Bytes()
}

func TestSpillKeepsEverything(t *testing.T) {
	b, want, out, errb := spillFixture(t)
	if b.Len() != len(want) {
		t.Fatalf("len %d want %d", b.Len(), len(want))
	}
	if b.raws[0].disk < b.raws[0].size-1024 {
		t.Fatalf("expected output on disk, %d bytes", b.raws[0].size)
	}
	// Read backwards and in windows to exercise the page cache.
	for i := len(want) - 1; i >= 0; i-- {
		l, ok := b.Line(i)
		if !ok || l.Text != want[i] {
			t.Fatalf("line %d = %q (%v), want %q", i, l.Text, ok, want[i])
		}
		if l.Kind == Output && l.Cursor != fmt.Sprintf("c%d", i) {
			t.Fatalf("line %d cursor %q", i, l.Cursor)
		}
		if !l.Time.Equal(at(i)) {
			t.Fatalf("line %d time %v", i, l.Time)
		}
	}
	if got := texts(b.Lines(95, 10)); strings.Join(got, "|") != strings.Join(want[95:105], "|") {
		t.Fatalf("window %q", got)
	}
	l, _ := b.Line(500)
	if !l.Capped {
		t.Errorf("line 500 not capped: %+v", l)
	}
	full, err := b.LineBytes(500)
	if err != nil || !strings.HasPrefix(string(full), "a very long line") || len(full) != 144 {
		t.Errorf("LineBytes(500) = %q, %v", full, err)
	}
	if e, _ := b.LineBytes(13); string(e) != "\x1b[1merr 13\x1b[0m" {
		t.Errorf("LineBytes(13) = %q", e)
	}
	var all, so, se bytes.Buffer
	if err := b.SaveRaw(&all); err != nil {
		t.Fatal(err)
	}
	if err := b.SaveRawStream(&so, "", client.Stdout); err != nil {
		t.Fatal(err)
	}
	if err := b.SaveRawStream(&se, "", client.Stderr); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(so.Bytes(), out) || !bytes.Equal(se.Bytes(), errb) {
		t.Errorf("per-stream raw differs: %d/%d %d/%d bytes", so.Len(), len(out), se.Len(), len(errb))
	}
	if all.Len() != len(out)+len(errb) || !bytes.HasPrefix(all.Bytes(), []byte("Line number 0 here\n")) {
		t.Errorf("SaveRaw: %d bytes, starts %q", all.Len(), all.Bytes()[:20])
	}
	if n := b.RawBytes(); n != int64(all.Len()) {
		t.Errorf("RawBytes %d, SaveRaw wrote %d", n, all.Len())
	}
	if b.Err() != nil {
		t.Fatal(b.Err())
	}
}

func TestSearch(t *testing.T) {
	b, want, _, _ := spillFixture(t)
	ctx := context.Background()
	find := func(q Query, from int, dir Direction) int {
		t.Helper()
		i, err := b.Search(ctx, q, from, dir)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	if i := find(Query{Text: "number 7 "}, 0, Forward); i != 7 {
		t.Errorf("forward on disk: %d", i)
	}
	if i := find(Query{Text: "number 7 "}, 8, Forward); i != -1 {
		t.Errorf("past the only match: %d", i)
	}
	if i := find(Query{Text: "LINE NUMBER 998", IgnoreCase: true}, 0, Forward); i != 998 {
		t.Errorf("case-insensitive into memory: %d", i)
	}
	if i := find(Query{Text: "LINE NUMBER 998"}, 0, Forward); i != -1 {
		t.Errorf("case-sensitive must miss: %d", i)
	}
	if i := find(Query{Text: "err 1"}, 20, Backward); i != 13 {
		t.Errorf("backward to disk: %d", i)
	}
	// SGR is not part of the searchable text.
	if i := find(Query{Text: "[1merr"}, 0, Forward); i != -1 {
		t.Errorf("matched inside SGR: %d", i)
	}
	if i := find(Query{Text: "note"}, 6, Forward); i != 102 {
		t.Errorf("marker text: %d", i)
	}
	b.AddData("", client.Stdout, []byte("tail partial"), "cx", at(0))
	if i := find(Query{Text: "tail partial"}, 0, Forward); i != len(want) {
		t.Errorf("partial line: %d", i)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Search(cctx, Query{Text: "nothing"}, 0, Forward); err == nil {
		t.Errorf("cancelled search returned no error")
	}
}

func TestFilter(t *testing.T) {
	b, want, _, _ := spillFixture(t)
	f := b.NewFilter(Query{Text: "err "}.Match)
	done, err := f.Update(context.Background(), 100)
	if err != nil || done {
		t.Fatalf("first update: done %v err %v", done, err)
	}
	if done, err = f.Update(context.Background(), 0); err != nil || !done {
		t.Fatalf("second update: done %v err %v", done, err)
	}
	var idx []int
	for i, w := range want {
		if strings.Contains(Plain(w), "err ") {
			idx = append(idx, i)
		}
	}
	n := len(idx)
	if f.Len() != n || n < 90 {
		t.Fatalf("filter len %d want %d", f.Len(), n)
	}
	if f.Index(0) != 3 || f.Index(n-1) != idx[n-1] || f.Index(n) != -1 {
		t.Errorf("indices %d %d %d", f.Index(0), f.Index(n-1), f.Index(n))
	}
	if l, _ := f.Line(1); Plain(l.Text) != "err 13" {
		t.Errorf("filter line 1 %q", l.Text)
	}
	if p := f.Position(14); p != 2 {
		t.Errorf("position of 14 = %d", p)
	}
	b.AddData("", client.Stderr, []byte("err partial"), "", at(0))
	if f.Len() != n+1 || f.Index(n) != len(want) {
		t.Errorf("partial match not in view: len %d index %d", f.Len(), f.Index(n))
	}
	b.AddData("", client.Stderr, []byte("!\nerr new\n"), "", at(0))
	f.Update(context.Background(), 0)
	if got := texts(f.Lines(n-1, 5)); len(got) != 3 || Plain(got[1]) != "err partial!" || Plain(got[2]) != "err new" {
		t.Errorf("after growth %q", got)
	}
}

func TestCloseRemovesFiles(t *testing.T) {
	b, _, _, _ := spillFixture(t)
	dir := b.Dir()
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("dir still there: %v", err)
	}
	if err := b.SaveRaw(&bytes.Buffer{}); err != ErrClosed {
		t.Errorf("SaveRaw after close: %v", err)
	}
	if _, ok := b.Line(0); ok || b.Len() != 0 || len(b.Lines(0, 10)) != 0 {
		t.Errorf("entries readable after close")
	}
	if i, _ := b.Search(context.Background(), Query{Text: "x"}, 0, Forward); i != -1 {
		t.Errorf("search after close found %d", i)
	}
	b.AddData("", client.Stdout, []byte("x\n"), "", at(0))
	b.AddMarker("", Note, "x", "", at(0))
	if b.Err() != ErrClosed {
		t.Errorf("Err after use when closed: %v", b.Err())
	}
}

func TestConcurrentUse(t *testing.T) {
	b := newBuf(t, Options{MemLines: 64})
	f := b.NewFilter(Query{Text: "7"}.Match)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		for ctx.Err() == nil {
			n := b.Len()
			b.Lines(max(0, n-48), 48)
			b.Search(ctx, Query{Text: "line 3", IgnoreCase: true}, 0, Forward)
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		for ctx.Err() == nil {
			f.Update(ctx, 500)
		}
	}()
	for i := 0; i < 3000; i++ {
		b.AddData("", client.Stdout, []byte(fmt.Sprintf("line %d\n", i)), "", at(i))
		if i%100 == 0 {
			f.Lines(max(0, f.Len()-10), 10)
		}
	}
	cancel()
	<-done
	<-done
	if _, err := f.Update(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	want := 0
	for i := 0; i < 3000; i++ {
		if strings.Contains(fmt.Sprint(i), "7") {
			want++
		}
	}
	if f.Len() != want {
		t.Fatalf("filter found %d, want %d", f.Len(), want)
	}
	if l, _ := b.Line(0); l.Text != "line 0" {
		t.Fatalf("line 0 %q", l.Text)
	}
}

func TestDiskFailureKeepsEntries(t *testing.T) {
	b := newBuf(t, Options{MemLines: 64})
	if err := os.RemoveAll(b.Dir()); err != nil { // the raw file can no longer be created
		t.Fatal(err)
	}
	b.AddData("", client.Stdout, []byte("first\n"), "", at(0))
	for i := 1; i < 30000; i++ {
		b.AddData("", client.Stdout, []byte(fmt.Sprintf("line %d\n", i)), "", at(i))
	}
	if b.Err() == nil {
		t.Fatal("no error reported")
	}
	if b.Len() != 30000 {
		t.Fatalf("len %d", b.Len())
	}
	for i := 0; i < 30000; i++ {
		l, _ := b.Line(i)
		want := fmt.Sprintf("line %d", i)
		if i == 0 {
			want = "first"
		}
		if l.Text != want {
			t.Fatalf("line %d = %q", i, l.Text)
		}
	}
	var raw bytes.Buffer
	if err := b.SaveRaw(&raw); err != nil || !strings.HasPrefix(raw.String(), "first\nline 1\n") || !strings.HasSuffix(raw.String(), "line 29999\n") {
		t.Fatalf("SaveRaw after disk failure: %v %q", err, raw.String()[:min(20, raw.Len())])
	}
}

func TestStaleDirectoriesRemoved(t *testing.T) {
	parent := t.TempDir()
	dead := filepath.Join(parent, "log-dead")
	live := filepath.Join(parent, "log-live")
	foreign := filepath.Join(parent, "log-foreign")
	for _, d := range []string{dead, live, foreign} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// A pid above any kernel's pid_max belongs to no process.
	os.WriteFile(filepath.Join(dead, ownerFile), []byte("2147483000"), 0o600)
	os.WriteFile(filepath.Join(live, ownerFile), []byte(fmt.Sprint(os.Getppid())), 0o600)
	b := newBuf(t, Options{Dir: parent})
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("dead owner's directory kept: %v", err)
	}
	for _, d := range []string{live, foreign, b.Dir()} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed: %v", d, err)
		}
	}
}

// TestRandomInterleaving feeds several sources and streams in random chunks with a tiny memory
// window: each source's lines, in order, must be its bytes split at LF, and LineBytes must give back
// every byte.
func TestRandomInterleaving(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	b := newBuf(t, Options{MemLines: 64})
	keys := []sourceKey{{"a", client.Stdout}, {"a", client.Stderr}, {"b", client.Stdout}, {"b", client.Stderr}}
	sent := map[sourceKey]*bytes.Buffer{}
	for _, k := range keys {
		sent[k] = &bytes.Buffer{}
	}
	alphabet := []byte("abc \t\x1b[31m\n\nxyz\xc3\xa9\n")
	for i := 0; i < 3000; i++ {
		k := keys[r.IntN(len(keys))]
		n := 1 + r.IntN(40)
		chunk := make([]byte, n)
		for j := range chunk {
			chunk[j] = alphabet[r.IntN(len(alphabet))]
		}
		sent[k].Write(chunk)
		b.AddData(k.name, k.stream, chunk, fmt.Sprint(i), at(i))
	}
	b.EndPartial()
	got := map[sourceKey]*bytes.Buffer{}
	gotLines := map[sourceKey][]string{}
	for _, k := range keys {
		got[k] = &bytes.Buffer{}
	}
	for i := 0; i < b.Len(); i++ {
		l, _ := b.Line(i)
		k := sourceKey{l.Source, l.Stream}
		raw, err := b.LineBytes(i)
		if err != nil {
			t.Fatal(err)
		}
		got[k].Write(raw)
		if !l.NoEOL {
			got[k].WriteByte('\n')
		}
		gotLines[k] = append(gotLines[k], l.Text)
	}
	for _, k := range keys {
		if !bytes.Equal(got[k].Bytes(), sent[k].Bytes()) {
			t.Fatalf("%v: LineBytes reassemble %d bytes, sent %d", k, got[k].Len(), sent[k].Len())
		}
		parts := strings.Split(sent[k].String(), "\n")
		if parts[len(parts)-1] == "" {
			parts = parts[:len(parts)-1]
		}
		s := sanitize.NewStream(sanitize.Options{MaxRunes: 4096})
		var want []string
		for _, l := range s.Feed(nil, sent[k].Bytes()) {
			want = append(want, l.Text)
		}
		if l, ok := s.Flush(); ok {
			want = append(want, l.Text)
		}
		if len(want) != len(parts) || strings.Join(gotLines[k], "\n") != strings.Join(want, "\n") {
			t.Fatalf("%v: %d lines, want %d", k, len(gotLines[k]), len(want))
		}
	}
}

func TestDescribeEveryKind(t *testing.T) {
	f := false
	for _, c := range []struct {
		ev   client.LogEvent
		want string
	}{
		{client.LogEvent{Kind: client.Gap, Gap: &client.GapInfo{Reason: client.GapInvalidCursor, Bytes: -1}}, "GAP: resume cursor rejected, restarted from the oldest retained output (amount missing unknown)"},
		{client.LogEvent{Kind: client.Gap, Gap: &client.GapInfo{Reason: client.GapRestarted}}, "GAP: stream restarted from the beginning"},
		{client.LogEvent{Kind: client.Interrupted, Err: errors.New("EOF")}, "INTERRUPTED: EOF"},
		{client.LogEvent{Kind: client.Reconnecting, Attempt: 2}, "RECONNECTING (attempt 2)"},
		{client.LogEvent{Kind: client.Resumed}, "RESUMED, no gap"},
		{client.LogEvent{Kind: client.Quiet}, "QUIET: no output; status says running"},
		{client.LogEvent{Kind: client.SuspectEnd}, "SUSPECT END: the stream ended but status still says running; still following"},
		{client.LogEvent{Kind: client.Ended, Status: &client.Process{Exit: &client.Exit{Code: 124, TimedOut: true}}}, "ENDED: TIMED OUT (exit 124)"},
		{client.LogEvent{Kind: client.Ended, Status: &client.Process{State: "error", Error: &client.RunError{Code: "spawn_failed", Message: "no such file"}}}, "ENDED: ERROR spawn_failed: no such file"},
		{client.LogEvent{Kind: client.Lost, Loss: &client.LossEvidence{Lookup: "absent from process list", SandboxRunning: &f}}, "LOST: the process is gone (absent from process list; sandbox stopped)"},
		{client.LogEvent{Kind: client.Failed, Reason: "bridge unreachable after 10 attempts"}, "FOLLOW FAILED: bridge unreachable after 10 attempts"},
	} {
		if got := Describe(c.ev); got != c.want {
			t.Errorf("%s: %q, want %q", c.ev.Kind, got, c.want)
		}
	}
}

func TestDescribeNotLiveIsNoFailure(t *testing.T) {
	got := Describe(client.LogEvent{Kind: client.Failed, Err: fmt.Errorf("follow x: %w", driver.ErrNotLive), Reason: "follow x: not followed"})
	if strings.Contains(got, "FAILED") || !strings.Contains(got, "NOT FOLLOWED HERE") {
		t.Fatalf("Describe = %q", got)
	}
	if got := Describe(client.LogEvent{Kind: client.Failed, Reason: "gave up"}); got != "FOLLOW FAILED: gave up" {
		t.Fatalf("a real failure: %q", got)
	}
}

// Append writes a batch's chunks from the caller's buffers (rawFile.held), not from copies: every
// byte still reads back after the caller overwrote its buffers on return, whatever the mix of
// small chunks (copied into cur), held ones, sources, block sizes, and a disk that fails.
func TestAppendBatchesFromCallersBuffers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		block int
		fail  bool
	}{{"1MiB blocks", 1 << 20, false}, {"small blocks", 8 << 10, false}, {"disk failure", 1 << 20, true}} {
		t.Run(tc.name, func(t *testing.T) {
			old := rawBlock
			rawBlock = tc.block
			t.Cleanup(func() { rawBlock = old })
			r := rand.New(rand.NewPCG(7, 8))
			b := newBuf(t, Options{MemLines: 64})
			if tc.fail {
				if err := os.RemoveAll(b.Dir()); err != nil {
					t.Fatal(err)
				}
			}
			names := []string{"a", "b"}
			sent := map[string]*bytes.Buffer{"a": {}, "b": {}}
			line := 0
			for batch := 0; batch < 60; batch++ {
				name := names[r.IntN(2)]
				var evs []client.LogEvent
				for i := r.IntN(12); i >= 0; i-- {
					// from a few bytes to well past rawHoldMin and rawDirect
					n := 1 + r.IntN(4)*r.IntN(40<<10)
					var chunk []byte
					for len(chunk) < n {
						chunk = fmt.Appendf(chunk, "%s line %d of a batch, long enough to be a plausible line of output\n", name, line)
						line++
					}
					sent[name].Write(chunk)
					evs = append(evs, client.LogEvent{Kind: client.Data, Stream: client.Stdout, Data: chunk})
				}
				b.Append(name, evs...)
				for _, ev := range evs { // the caller reuses its buffers
					for j := range ev.Data {
						ev.Data[j] = '#'
					}
				}
			}
			b.EndPartial()
			for _, name := range names {
				var raw bytes.Buffer
				if err := b.SaveRawStream(&raw, name, client.Stdout); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(raw.Bytes(), sent[name].Bytes()) {
					t.Fatalf("%s: saved %d bytes, sent %d (first difference at %d)", name, raw.Len(), sent[name].Len(), firstDiff(raw.Bytes(), sent[name].Bytes()))
				}
			}
			var lines bytes.Buffer
			for i := 0; i < b.Len(); i++ {
				l, _ := b.Line(i)
				if l.Source != "a" {
					continue
				}
				raw, err := b.LineBytes(i)
				if err != nil {
					t.Fatal(err)
				}
				lines.Write(raw)
				lines.WriteByte('\n')
			}
			if !bytes.Equal(lines.Bytes(), sent["a"].Bytes()) {
				t.Fatalf("a: lines reassemble %d bytes, sent %d", lines.Len(), sent["a"].Len())
			}
			if (b.Err() != nil) != tc.fail {
				t.Fatalf("error %v, want one: %v", b.Err(), tc.fail)
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// Raw files keep what follows their last whole block in memory, but a buffer following many
// sources keeps no more than rawWaitingMax blocks so: the files holding the most write it all, and
// every byte still reads back.
func TestRawWaitingBounded(t *testing.T) {
	old := rawBlock
	rawBlock = 8 << 10
	t.Cleanup(func() { rawBlock = old })
	r := rand.New(rand.NewPCG(11, 12))
	b := newBuf(t, Options{MemLines: 64})
	const sources = 20
	sent := make([]bytes.Buffer, sources)
	limit := int64(rawWaitingMax * rawBlock)
	for batch := 0; batch < 400; batch++ {
		i := r.IntN(sources)
		name := fmt.Sprintf("p%d", i)
		var evs []client.LogEvent
		for k := r.IntN(4); k >= 0; k-- {
			chunk := bytes.Repeat([]byte{'a' + byte(i)}, rawHoldMin+r.IntN(3*rawBlock))
			chunk[len(chunk)-1] = '\n'
			sent[i].Write(chunk)
			evs = append(evs, client.LogEvent{Kind: client.Data, Stream: client.Stdout, Data: chunk})
		}
		b.Append(name, evs...)
		b.mu.Lock()
		var waiting int64
		for _, rf := range b.raws {
			waiting += int64(len(rf.cur))
		}
		b.mu.Unlock()
		if waiting > limit {
			t.Fatalf("after batch %d, %d bytes wait in memory (at most %d)", batch, waiting, limit)
		}
	}
	for i := range sent {
		var raw bytes.Buffer
		if err := b.SaveRawStream(&raw, fmt.Sprintf("p%d", i), client.Stdout); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(raw.Bytes(), sent[i].Bytes()) {
			t.Fatalf("p%d: saved %d bytes, sent %d (first difference at %d)", i, raw.Len(), sent[i].Len(), firstDiff(raw.Bytes(), sent[i].Bytes()))
		}
	}
	if b.Err() != nil {
		t.Fatal(b.Err())
	}
}
