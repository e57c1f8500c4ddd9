package root

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/internal/cli/cmdutil"
	"sandscope/record"
)

// A record that cannot be written (the file size limit plays a full disk) costs logs -f nothing:
// the output is whole, the exit status is the process's ending, and one notice after the output
// says the record could not be written.
func TestLogsFollowWithRecordOnFullDisk(t *testing.T) {
	b, flags := bridgeArgs(t)
	p := startProc(t, b, "sh", "-c", "printf 'out1\\n'; sleep 0.2; printf 'out2\\n'; exit 3")
	bin := sandscopeBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// no file of the child may grow past 512 bytes: the record's database cannot even start
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", `ulimit -f 1 && exec "$0" "$@"`, bin}, append(flags, "logs", "local", p.ID, "-f")...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("exit %d, stderr %q", ee.ExitCode(), stderr.String())
	}
	if stdout.String() != "out1\nout2\n" {
		t.Fatalf("stdout %q", stdout.String())
	}
	errs := stderr.String()
	end := strings.Index(errs, "ended: EXITED 3")
	note := strings.Index(errs, "sandscope: record: ")
	if end < 0 || note < end {
		t.Fatalf("stderr should end the follow, then say the record failed: %q", errs)
	}
}

// A command's lookups wait for its next event (a clean replay opens no record before its end),
// come before that event, make the entry a stream's LOST is about, and a boundary the watcher and
// a follower's loss evidence both saw is recorded once.
func TestCommandRecordHoldsLookups(t *testing.T) {
	dir := t.TempDir()
	opened := make(chan struct{}, 1)
	var rec *record.Record
	c := cmdutil.StartCommandRecord(func() (*record.Record, error) {
		opened <- struct{}{}
		var err error
		rec, err = record.Open(record.Options{Dir: dir, Bridge: "test", Version: "test"})
		return rec, err
	}, io.Discard)
	p := client.Process{ID: "p1", State: "running", Incarnation: 1}
	c.LookedUpProcess("box", &p, "the process list")
	time.Sleep(50 * time.Millisecond)
	select {
	case <-opened:
		t.Fatal("a lookup opened the record before any event")
	default:
	}
	loss := &client.LossEvidence{Lookup: "GET process: 404", SandboxRunning: func() *bool { b := true; return &b }(), Incarnation: 2, Previous: 1}
	c.Watched(client.SandboxEvent{Kind: client.IncarnationChanged, Sandbox: "box", Time: time.Now(), Incarnation: client.Incarnation{Number: 2}, Previous: client.Incarnation{Number: 1},
		Evidence: []string{"the bridge reports incarnation 2 (was 1)"}})
	c.Observe("box", p.ID)(client.LogEvent{Kind: client.Lost, Loss: loss, Status: &p, Reason: client.DescribeLoss(loss)})
	c.Close()
	ro, err := record.Open(record.Options{Dir: dir, Bridge: "test", Version: "test", ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	evs, err := ro.Events("box", "")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ev := range evs {
		kinds = append(kinds, string(ev.Source)+" "+ev.Kind)
	}
	want := []string{"lookup sandbox started", "lookup process appeared", "watch incarnation changed", "stream lost"}
	if strings.Join(kinds, ", ") != strings.Join(want, ", ") {
		t.Fatalf("recorded %q, want %q", kinds, want)
	}
	st := ro.State("box")
	if e := st.Find(record.Process, "p1"); e == nil || !e.Lost || e.Incarnation != 1 || len(st.Incarnations) != 2 {
		t.Fatalf("entry %+v, incarnations %d", e, len(st.Incarnations))
	}
}

// logs -f of a process that has already ended opens the record while its replay runs, not after
// its last byte: with the command's stdout not read (so the replay cannot reach its end), the
// record's file appears all the same. Following a running process still opens nothing before
// its stream has something to record.
func TestLogsFollowOpensRecordAheadForEndedProcess(t *testing.T) {
	b, flags := bridgeArgs(t)
	ended := startProc(t, b, "sh", "-c", "head -c 600000 /dev/zero | tr '\\0' x; exit 4")
	b.WaitExit(t, "local", ended.ID)
	bin := sandscopeBinary(t)
	recordFiles := func(state string) []string {
		m, _ := filepath.Glob(filepath.Join(state, "sandscope", "record", "*.db"))
		return m
	}
	follow := func(id string) (cmd *exec.Cmd, stdout io.ReadCloser, state string) {
		state = t.TempDir()
		cmd = exec.Command(bin, append(flags, "logs", "local", id, "-f")...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + state}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, stdout, state
	}

	cmd, stdout, state := follow(ended.ID)
	deadline := time.Now().Add(20 * time.Second)
	for len(recordFiles(state)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the record was not opened while the replay of an ended process waited for its reader")
		}
		time.Sleep(20 * time.Millisecond)
	}
	n, err := io.Copy(io.Discard, stdout)
	if err != nil || n != 600000 {
		t.Fatalf("read %d bytes of output (%v)", n, err)
	}
	if err := cmd.Wait(); err != nil { // the ending is confirmed: exit 0
		t.Fatal(err)
	}
	if e := commandRecordOf(t, state, flags).State("local").Find(record.Process, ended.ID); e == nil || e.Stream != "ended" || e.Process.Exit == nil || e.Process.Exit.Code != 4 {
		t.Fatalf("the record should hold the ending (exit 4): %+v", e)
	}

	running := startProc(t, b, "sh", "-c", "sleep 1.5; echo late")
	cmd, stdout, state = follow(running.ID)
	time.Sleep(700 * time.Millisecond)
	if m := recordFiles(state); len(m) != 0 {
		t.Fatalf("following a running process opened the record before anything to record: %v", m)
	}
	if _, err := io.Copy(io.Discard, stdout); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if len(recordFiles(state)) == 0 {
		t.Fatal("the ending of the running process was not recorded")
	}
}
