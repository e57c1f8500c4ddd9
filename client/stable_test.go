package client_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
)

func stableClient(t *testing.T, opts ...bridgetest.Option) (*bridgetest.Bridge, *client.Stable) {
	t.Helper()
	b := bridgetest.Start(t, append([]bridgetest.Option{bridgetest.WithDialect(localbridge.DialectStable)}, opts...)...)
	c, err := client.New(b.URL, client.WithToken(b.Token))
	if err != nil {
		t.Fatal(err)
	}
	return b, client.NewStable(c)
}

func collectExec(t *testing.T, run *client.ExecRun) (stdout, stderr string, last client.ExecEvent) {
	t.Helper()
	var o, e strings.Builder
	for ev := range run.Events() {
		switch ev.Kind {
		case client.ExecStdout:
			o.Write(ev.Text)
		case client.ExecStderr:
			e.Write(ev.Text)
		default:
			last = ev
		}
	}
	return o.String(), e.String(), last
}

func collectRun(t *testing.T, run *client.RecordedRun) (stdout, stderr string, res client.RunResult) {
	t.Helper()
	var o, e strings.Builder
	for ev := range run.Events() {
		switch {
		case ev.Result != nil:
			res = *ev.Result
		case ev.Kind == client.ExecStdout:
			o.Write(ev.Text)
		case ev.Kind == client.ExecStderr:
			e.Write(ev.Text)
		}
	}
	return o.String(), e.String(), res
}

func TestStableExecEvents(t *testing.T) {
	_, s := stableClient(t)
	ctx := context.Background()
	run, err := s.Exec(ctx, "box", client.ExecOptions{Argv: []string{"sh", "-c", "echo out; echo err >&2; printf '\\377'; exit 5"}})
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, last := collectExec(t, run)
	if out != "out\n\uFFFD" || errOut != "err\n" {
		t.Errorf("output %q %q", out, errOut)
	}
	if last.Kind != client.ExecExit || last.Code != 5 {
		t.Errorf("ending %+v", last)
	}
	// The preview client refuses the stable bridge's sandbox routes, and the stable adapter a
	// preview bridge.
	pb := bridgetest.Start(t)
	pc, _ := client.New(pb.URL, client.WithToken(pb.Token))
	if _, err := client.NewStable(pc).Exec(ctx, "box", client.ExecOptions{Argv: []string{"true"}}); !errors.Is(err, client.ErrUnsupported) {
		t.Errorf("stable exec on a preview bridge: %v", err)
	}
}

func TestStableRunConfirmedAndFakeCompletion(t *testing.T) {
	b, s := stableClient(t)
	ctx := context.Background()
	run, err := s.Run(ctx, "box", client.ExecOptions{Argv: []string{"sh", "-c", "printf 'no newline'; echo e >&2; exit 7"}})
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, res := collectRun(t, run)
	if out != "no newline" || errOut != "e\n" {
		t.Errorf("output %q %q (recorder framing must be stripped)", out, errOut)
	}
	if res.State != client.RunConfirmed || res.Code != 7 {
		t.Errorf("result %+v", res)
	}
	if run.PID == 0 || run.Incarnation == "" {
		t.Errorf("header not read: pid %d incarnation %q", run.PID, run.Incarnation)
	}

	// The exit-code-less completion: {"exit_code":0} while the command runs on. Never confirmed.
	run, err = s.Run(ctx, "box", client.ExecOptions{Argv: []string{"sh", "-c", "echo started; sleep 1; echo finished; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	var first client.RunEvent
	for first = range run.Events() {
		if first.Kind == client.ExecStdout {
			break
		}
	}
	if n := b.Server.CompleteWithoutExit("box"); n != 1 {
		t.Fatalf("fabricated %d", n)
	}
	_, _, res = collectRun(t, run)
	if res.State != client.RunUnconfirmed || res.State == client.RunConfirmed {
		t.Fatalf("fabricated completion gave %+v, want UNCONFIRMED", res)
	}
	// The recorder knows the truth once the command ends.
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec, err := s.Recover(ctx, "box", run.ID, run.Incarnation)
		if err != nil {
			t.Fatal(err)
		}
		if rec.State == client.RunConfirmed {
			if rec.Code != 3 || string(rec.RecoveredOut) != "started\nfinished\n" {
				t.Errorf("recovered %+v out %q", rec, rec.RecoveredOut)
			}
			break
		}
		if rec.State != client.RunStillGoing || time.Now().After(deadline) {
			t.Fatalf("recover: %+v", rec)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestStableRunCutRecoveredAndLost(t *testing.T) {
	b, s := stableClient(t)
	ctx := context.Background()
	run, err := s.Run(ctx, "box", client.ExecOptions{Argv: []string{"sh", "-c", "echo one; sleep 0.5; printf '\\377two\\n'; exit 4"}})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range run.Events() {
		if ev.Kind == client.ExecStdout {
			break
		}
	}
	if n := b.Server.CutExecStreams("box"); n != 1 {
		t.Fatalf("cut %d", n)
	}
	_, _, res := collectRun(t, run)
	if res.State != client.RunInterrupted {
		t.Fatalf("cut stream gave %+v, want INTERRUPTED", res)
	}
	var rec client.RunResult
	for deadline := time.Now().Add(10 * time.Second); ; {
		rec, err = s.Recover(ctx, "box", run.ID, run.Incarnation)
		if err != nil {
			t.Fatal(err)
		}
		if rec.State != client.RunStillGoing || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Byte for byte from the files, unlike the text-decoded stream.
	if rec.State != client.RunConfirmed || rec.Code != 4 || !bytes.Equal(rec.RecoveredOut, []byte("one\n\xfftwo\n")) {
		t.Errorf("recovered %+v out %q", rec, rec.RecoveredOut)
	}

	// A replaced container takes the files with it: LOST, inferred.
	run, err = s.Run(ctx, "box", client.ExecOptions{Argv: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	// the recorder's header is the run's first event (an empty one, before any output): its
	// fields are set once it is received
	if _, ok := <-run.Events(); !ok || run.Incarnation == "" {
		t.Fatalf("no header event (open %v), incarnation %q", ok, run.Incarnation)
	}
	// The replacement container starts with an empty /workspace, as on the platform.
	if err := b.Server.ReplaceSandbox("box"); err != nil {
		t.Fatal(err)
	}
	_, _, res = collectRun(t, run)
	if res.State != client.RunErrored || res.ErrCode != "exec_error" {
		t.Errorf("replaced container: %+v, want ERROR exec_error", res)
	}
	rec, err = s.Recover(ctx, "box", run.ID, run.Incarnation)
	if err != nil || rec.State != client.RunLost || !rec.Inferred {
		t.Errorf("after replacement: %+v %v, want LOST inferred", rec, err)
	}
}

func TestStableSessions(t *testing.T) {
	_, s := stableClient(t)
	ctx := context.Background()
	id, err := s.CreateSession(ctx, "box", client.SessionOptions{ID: "dev", Env: map[string]string{"GREETING": "hi"}})
	if err != nil || id != "dev" {
		t.Fatalf("create: %q %v", id, err)
	}
	run, err := s.Exec(ctx, "box", client.ExecOptions{Argv: []string{"sh", "-c", `echo "$GREETING"`}, Session: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	if out, _, last := collectExec(t, run); out != "hi\n" || last.Kind != client.ExecExit || last.Code != 0 {
		t.Errorf("session exec %q %+v", out, last)
	}
	if err := s.DeleteSession(ctx, "box", "dev"); err != nil {
		t.Fatal(err)
	}
	err = s.DeleteSession(ctx, "box", "dev")
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Code != "session_error" {
		t.Errorf("deleting again: %v", err)
	}
	if _, err := s.CreateSession(ctx, "box", client.SessionOptions{ID: "a b"}); !errors.Is(err, client.ErrInvalidRequest) {
		t.Errorf("unusable ID accepted: %v", err)
	}
}

func TestStablePTYReplayAndEnd(t *testing.T) {
	_, s := stableClient(t)
	ctx := context.Background()
	p, err := s.ConnectPTY(ctx, "box", client.PTYOptions{Cols: 80, Rows: 24, Probe: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	wait := func(p *client.PTYConn, want func(client.TermEvent, string) bool) (string, client.TermEvent) {
		t.Helper()
		var out strings.Builder
		timeout := time.After(10 * time.Second)
		for {
			select {
			case ev, ok := <-p.Events():
				if !ok {
					t.Fatalf("events closed (have %q)", out.String())
				}
				out.Write(ev.Data)
				if want(ev, out.String()) {
					return out.String(), ev
				}
			case <-timeout:
				t.Fatalf("timed out (have %q)", out.String())
			}
		}
	}
	_, _ = p.Write([]byte("echo mark-$((6*7))\n"))
	wait(p, func(_ client.TermEvent, s string) bool { return strings.Contains(s, "mark-42") })
	p.Close()

	p, err = s.ConnectPTY(ctx, "box", client.PTYOptions{Cols: 80, Rows: 24, Probe: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, ev := wait(p, func(ev client.TermEvent, _ string) bool { return ev.Kind != client.TermOutput })
	if ev.Kind != client.TermReplayed || !strings.Contains(string(ev.Data), "mark-42") {
		t.Fatalf("reconnect: %v %q, want the replayed buffer", ev.Kind, ev.Data)
	}
	_, _ = p.Write([]byte("exit\n"))
	_, ev = wait(p, func(ev client.TermEvent, _ string) bool {
		return ev.Kind == client.TermEnded || ev.Kind == client.TermFailed
	})
	if ev.Kind != client.TermEnded {
		t.Fatalf("after exit: %v %s", ev.Kind, ev.Reason)
	}
	p.Close()
}

// A run whose header never arrived (cut before the first byte) may not have started when the
// first probe looks: no files then decide nothing until the start grace has passed.
func TestStableRecoverBeforeRecorderStarted(t *testing.T) {
	_, s := stableClient(t)
	ctx := context.Background()
	fresh := time.Now().UTC().Format("20060102T150405Z") + "-0a1b2c3d"
	rec, err := s.Recover(ctx, "box", fresh, "")
	if err != nil || rec.State != client.RunStillGoing {
		t.Errorf("just launched, no files: %+v %v, want STILL RUNNING", rec, err)
	}
	old := time.Now().Add(-time.Hour).UTC().Format("20060102T150405Z") + "-0a1b2c3d"
	rec, err = s.Recover(ctx, "box", old, "")
	if err != nil || rec.State != client.RunLost || !rec.Inferred {
		t.Errorf("an hour old, no files: %+v %v, want LOST inferred", rec, err)
	}
	// Once the header was seen, missing files are evidence at once.
	rec, err = s.Recover(ctx, "box", fresh, "feedface")
	if err != nil || rec.State != client.RunLost {
		t.Errorf("header seen, no files: %+v %v, want LOST", rec, err)
	}
}
