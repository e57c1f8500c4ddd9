package root

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/internal/cli/cmdutil"
	"sandscope/localbridge"
	"sandscope/localbridge/bridgetest"
)

// fakeDriver is a driver a test scripts: Start answers from starts (then the run below), Follow
// sends events and closes. Methods it does not script are the nil embedded interface's (a test
// that reaches one fails loudly).
type fakeDriver struct {
	driver.Driver
	mu       sync.Mutex
	starts   []error // errors Start returns, in order, before it succeeds
	started  int
	run      driver.Run
	features driver.Features
	events   []client.LogEvent
	followed []driver.FollowOptions
}

func (f *fakeDriver) BaseURL() string                   { return "http://fake.invalid" }
func (f *fakeDriver) Capabilities() client.Capabilities { return client.Capabilities{} }
func (f *fakeDriver) Features() driver.Features         { return f.features }
func (f *fakeDriver) Close() error                      { return nil }

func (f *fakeDriver) Start(_ context.Context, _ string, _ driver.StartRequest) (driver.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started++
	if len(f.starts) > 0 {
		err := f.starts[0]
		f.starts = f.starts[1:]
		return driver.Run{}, err
	}
	return f.run, nil
}

func (f *fakeDriver) Runs(context.Context, string) ([]driver.Run, error) {
	return []driver.Run{f.run}, nil
}

func (f *fakeDriver) Follow(_ context.Context, _, _ string, opts driver.FollowOptions) <-chan client.LogEvent {
	f.mu.Lock()
	f.followed = append(f.followed, opts)
	f.mu.Unlock()
	ch := make(chan client.LogEvent, len(f.events))
	for _, ev := range f.events {
		ch <- ev
	}
	close(ch)
	return ch
}

// wakingDriver is fakeDriver with a wake notice (driver.Waker), said once per sandbox.
type wakingDriver struct {
	*fakeDriver
	told map[string]bool
}

func (w *wakingDriver) WakeNotice(sandbox, what string) string {
	if w.told[sandbox] {
		return ""
	}
	w.told[sandbox] = true
	return what + " starts the container of sandbox " + sandbox
}

// runWith runs the command line args with d injected through the factory, and returns the exit
// status and what the command wrote.
func runWith(t *testing.T, d driver.Driver, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv("GOMAXPROCS", "4") // exec and logs would set the test process's to 1
	g := &cmdutil.Factory{ConnectHook: func(context.Context, cmdutil.ConnectOptions) (*cmdutil.Conn, error) {
		return &cmdutil.Conn{D: d}, nil
	}}
	root := newRootCmd(g)
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(""))
	root.SetArgs(args)
	err := root.Execute()
	var ee *cmdutil.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.Code
		if ee.Err != nil {
			errOut.WriteString("sandscope: " + ee.Err.Error() + "\n")
		}
	default:
		t.Fatalf("%v: %v", args, err)
	}
	return code, out.String(), errOut.String()
}

func ended(id, state string, code *int) client.LogEvent {
	p := &client.Process{ID: id, State: state}
	if code != nil {
		p.Exit = &client.Exit{Code: *code}
	}
	return client.LogEvent{Kind: client.Ended, Status: p}
}

func intp(i int) *int { return &i }

// exec exits with the run's own code only for a confirmed ending; a code the stream reported
// and nothing confirms is 255 with a notice saying why, and the ending line is the same words.
func TestExecEndingsThroughTheDriver(t *testing.T) {
	for _, tc := range []struct {
		name   string
		final  client.LogEvent
		code   int
		line   string
		notice string
	}{
		{"confirmed", ended("r1", driver.StateExited, intp(3)), 3, "process r1 ended: EXITED 3", ""},
		{"confirmed zero", ended("r1", driver.StateExited, intp(0)), 0, "process r1 ended: EXITED 0", ""},
		{"reported", ended("r1", driver.StateReported, intp(3)), cmdutil.ExitExecUnsure, "process r1 ended: REPORTED 3 (unconfirmed)", "the stream reported exit code 3 and nothing confirms it"},
		{"ended", ended("r1", driver.StateEnded, nil), cmdutil.ExitExecUnsure, "process r1 ended: ENDED exit code unknown", "the run ended and its exit code is unknown"},
		{"interrupted", ended("r1", driver.StateInterrupted, nil), cmdutil.ExitExecUnsure, "process r1 ended: INTERRUPTED", "the stream broke off and how the run ended is not known"},
		{"lost", client.LogEvent{Kind: client.Lost, Reason: "its container was replaced"}, cmdutil.ExitExecUnsure, "lost: its container was replaced", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &fakeDriver{run: driver.Run{ID: "r1", State: driver.StateRunning},
				events: []client.LogEvent{{Kind: client.Data, Stream: client.Stdout, Data: []byte("out\n")}, tc.final}}
			code, stdout, stderr := runWith(t, d, "exec", "box", "--", "true")
			if code != tc.code || stdout != "out\n" || !strings.Contains(stderr, "sandscope: "+tc.line+"\n") {
				t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
			}
			if tc.notice != "" && !strings.Contains(stderr, "sandscope: exit status 255: "+tc.notice) {
				t.Errorf("no notice saying why: %q", stderr)
			}
			if tc.notice == "" && strings.Contains(stderr, "exit status 255:") {
				t.Errorf("a notice for an ending that needs none: %q", stderr)
			}
			if len(d.followed) != 1 || d.followed[0].Background || d.followed[0].Status == nil || d.followed[0].Status.ID != "r1" {
				t.Errorf("follow options %+v", d.followed)
			}
		})
	}
}

// A start refused for capacity started nothing: exec retries it with a notice each time, on any
// driver; the wake notice is said once, before the first request.
func TestExecRetriesCapacityThroughTheDriver(t *testing.T) {
	capErr := &client.APIError{Status: 503, Code: "capacity_exceeded", Message: "no capacity"}
	if !errors.Is(capErr, client.ErrCapacity) {
		t.Fatalf("the test's error is not a capacity error: %v", capErr)
	}
	d := &wakingDriver{fakeDriver: &fakeDriver{starts: []error{capErr, capErr}, run: driver.Run{ID: "r1", State: driver.StateRunning},
		events: []client.LogEvent{ended("r1", driver.StateExited, intp(0))}}, told: map[string]bool{}}
	code, _, stderr := runWith(t, d, "exec", "box", "--", "true")
	if code != 0 || d.started != 3 || strings.Count(stderr, "retrying in") != 2 {
		t.Fatalf("exit %d after %d starts; stderr %q", code, d.started, stderr)
	}
	if strings.Count(stderr, "starts the container of sandbox box") != 1 || strings.Index(stderr, "starts the container") > strings.Index(stderr, "retrying") {
		t.Errorf("wake notice: %q", stderr)
	}
	// any other failure may have had an effect: no retry
	d2 := &fakeDriver{starts: []error{errors.New("boom")}}
	if code, _, stderr := runWith(t, d2, "exec", "box", "--", "true"); code != cmdutil.ExitExecUnsure || d2.started != 1 {
		t.Errorf("exit %d after %d starts; stderr %q", code, d2.started, stderr)
	}
}

// Commands ask the driver what it offers: a driver without driver.Sessions refuses sessions
// (exit 2) before anything is started.
func TestSessionsOnlyWhereTheDriverHasThem(t *testing.T) {
	d := &fakeDriver{}
	for _, args := range [][]string{
		{"session", "ls", "box"},
		{"exec", "--session", "dev", "box", "--", "true"},
	} {
		code, _, stderr := runWith(t, d, args...)
		if code != cmdutil.ExitUsage || !strings.Contains(stderr, "this bridge has no sessions (") {
			t.Errorf("%v: exit %d stderr %q", args, code, stderr)
		}
	}
	if d.started != 0 {
		t.Errorf("%d starts", d.started)
	}
}

// logs RUN without -f names the ending; wait exits with a confirmed code and 255 otherwise.
func TestLogsAndWaitEndingsThroughTheDriver(t *testing.T) {
	d := &fakeDriver{run: driver.Run{ID: "r1-long-id", State: driver.StateExited}, features: driver.Features{NonWakingLookups: true},
		events: []client.LogEvent{{Kind: client.Data, Stream: client.Stderr, Data: []byte("e\n")}, ended("r1-long-id", driver.StateExited, intp(3))}}
	code, _, stderr := runWith(t, d, "logs", "box", "r1")
	if code != 0 || !strings.Contains(stderr, "e\nsandscope: process r1-long-id ended: EXITED 3\n") {
		t.Fatalf("logs: exit %d stderr %q", code, stderr)
	}
	if len(d.followed) != 1 || !d.followed[0].NoFollow {
		t.Errorf("logs without -f followed with %+v", d.followed)
	}
	if code, _, stderr := runWith(t, d, "wait", "box", "r1"); code != 3 || !strings.Contains(stderr, "EXITED 3") {
		t.Errorf("wait: exit %d stderr %q", code, stderr)
	}
	d.events = []client.LogEvent{ended("r1-long-id", driver.StateEnded, nil)}
	if code, _, stderr := runWith(t, d, "wait", "box", "r1"); code != cmdutil.ExitExecUnsure || !strings.Contains(stderr, "ENDED exit code unknown") || !strings.Contains(stderr, "exit status 255: ") {
		t.Errorf("wait on an ending without a code: exit %d stderr %q", code, stderr)
	}
	if code, _, stderr := runWith(t, d, "logs", "-f", "box", "r1"); code != cmdutil.ExitNoResume {
		t.Errorf("logs -f of an ending without a code: exit %d stderr %q", code, stderr)
	}
}

// Where reading a run starts its container, wait answers an ending the driver already knows
// without following the run; a run still going is followed.
func TestWaitAnswersAKnownEndingWithoutAStream(t *testing.T) {
	d := &fakeDriver{run: driver.Run{ID: "r1", State: driver.StateExited, Exit: &client.Exit{Code: 6}}}
	code, _, stderr := runWith(t, d, "wait", "box", "r1")
	if code != 6 || len(d.followed) != 0 || !strings.Contains(stderr, "process r1 ended: EXITED 6 (from the record, no request sent)") {
		t.Fatalf("exit %d, %d follows, stderr %q", code, len(d.followed), stderr)
	}
	d = &fakeDriver{run: driver.Run{ID: "r1", State: driver.StateLost}}
	if code, _, stderr := runWith(t, d, "wait", "box", "r1"); code != cmdutil.ExitLost || len(d.followed) != 0 {
		t.Errorf("lost: exit %d, %d follows, stderr %q", code, len(d.followed), stderr)
	}
	d = &fakeDriver{run: driver.Run{ID: "r1", State: driver.StateRunning}, events: []client.LogEvent{ended("r1", driver.StateExited, intp(0))}}
	if code, _, stderr := runWith(t, d, "wait", "box", "r1"); code != 0 || len(d.followed) != 1 {
		t.Errorf("running: exit %d, %d follows, stderr %q", code, len(d.followed), stderr)
	}
}

// connect is the one place that opens a driver: a bridge whose lookups start containers gets the
// record at once (its driver answers lookups from it) and the command no second record of its
// own; a bridge whose lookups start nothing gets none (the command's own record opens when it has
// something to keep).
func TestConnectGivesTheRecordOnlyWhereLookupsWake(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stable bool
	}{{"preview", false}, {"stable", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("XDG_STATE_HOME", t.TempDir())
			t.Setenv("SANDSCOPE_URL", "")
			var opts []bridgetest.Option
			if tc.stable {
				opts = append(opts, bridgetest.WithDialect(localbridge.DialectStable))
			}
			b := bridgetest.Start(t, opts...)
			tok := filepath.Join(t.TempDir(), "token")
			if err := os.WriteFile(tok, []byte(b.Token), 0o600); err != nil {
				t.Fatal(err)
			}
			var got driver.Options
			g := &cmdutil.Factory{URL: b.URL, TokenFile: tok}
			g.OpenDriver = func(ctx context.Context, c *client.Client, o driver.Options) (driver.Driver, error) {
				got = o
				return driver.Open(ctx, c, o)
			}
			var stderr bytes.Buffer
			cmd := &cobra.Command{}
			cmd.SetErr(&stderr)
			cn, err := g.Connect(context.Background(), cmd, cmdutil.ConnectOptions{Op: "test", NoAnswerExit: cmdutil.ExitFailure})
			if err != nil {
				t.Fatal(err)
			}
			defer cn.Close()
			_, sessions := cn.D.(driver.Sessions)
			if sessions != tc.stable || (got.Record != nil) != tc.stable || (cn.Rec != nil) != tc.stable || got.Notices == nil {
				t.Errorf("sessions %v, record given %v, kept %v, notices %v", sessions, got.Record != nil, cn.Rec != nil, got.Notices != nil)
			}
			rec := cn.Recorder(false)
			if (rec == nil) != tc.stable {
				t.Errorf("the command's own record: %v", rec != nil)
			}
			rec.Close()
			if stderr.Len() != 0 {
				t.Errorf("stderr %q", stderr.String())
			}
		})
	}
}
