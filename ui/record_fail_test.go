package ui

import (
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/otlpexport"
	"sandscope/record"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
)

// When the record's disk fills up, the status line says so plainly — where, why, how much was not
// kept, and that following goes on — and the screen stays. The file size limit (RLIMIT_FSIZE)
// plays the full disk, in a child process so that it binds nothing else.
func TestRecordWriteFailureOnStatusLine(t *testing.T) {
	if os.Getenv("SANDSCOPE_UI_FULL_DISK_CHILD") != "" {
		uiFullDiskChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestRecordWriteFailureOnStatusLine$", "-test.v")
	cmd.Env = append(os.Environ(), "SANDSCOPE_UI_FULL_DISK_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "UI-FULL-DISK-OK") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func uiFullDiskChild(t *testing.T) {
	br := uitest.NewBridge()
	br.Sandboxes = []client.SandboxInfo{{ID: "sandboxaaaa", Running: true}}
	m := newRoot(t, br)
	for _, msg := range uitest.Exec(m.Init(), wait) {
		step(m, msg, 1)
	}
	rec := m.ctx.Record
	if rec == nil {
		t.Fatal("no record")
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 256 << 10, Max: 256 << 10}); err != nil {
		t.Fatal(err)
	}
	got := make(chan any, 1)
	go func() { got <- watchRecordWrites(m.ctx.BaseCtx(), rec, 0)() }()
	big := strings.Repeat("x", 16<<10)
	deadline := time.After(30 * time.Second)
	var msg any
	for msg == nil {
		rec.Add(record.Event{Sandbox: "sandboxaaaa", Source: record.FromStream, Kind: "interrupted", Entity: record.Process, EntityID: "p", Reason: big})
		select {
		case msg = <-got:
		case <-deadline:
			t.Fatal("no write failure reached the UI")
		case <-time.After(2 * time.Millisecond):
		}
	}
	step(m, msg, 0)
	v := m.View()
	flat := strings.Join(strings.Fields(v), " ")
	for _, want := range []string{"record: cannot write,", "not kept; following goes on", "Sandboxes"} {
		if !strings.Contains(flat, want) {
			t.Fatalf("the screen lacks %q:\n%s", want, v)
		}
	}
	t.Log("UI-FULL-DISK-OK")
}

// Nothing recorded has more than one reason, and screens are told which: a bridge that never
// answered has a state directory but no identity to name its record by.
func TestOpenBridgeSaysWhyNothingIsRecorded(t *testing.T) {
	for _, c := range []struct {
		name, stateDir, recordID, want string
	}{
		{"no state directory", "", "", "no state directory"},
		{"silent bridge", t.TempDir(), "", "this bridge has not answered yet"},
		{"unopenable record", "/dev/null/state", "http://127.0.0.1:7681", "the record could not be opened: "},
	} {
		ctx := &common.Context{StateDir: c.stateDir, RecordID: c.recordID, Ctx: context.Background()}
		openBridge(ctx, Target{Driver: uitest.NewBridge()}, record.Budget{}, record.WatchBudget{}, otlpexport.Resolved{}, io.Discard)
		if ctx.Record != nil || !strings.HasPrefix(ctx.NotRecorded, c.want) {
			t.Errorf("%s: record %v, NotRecorded %q, want %q", c.name, ctx.Record != nil, ctx.NotRecorded, c.want)
		}
		closeBridge(ctx)
	}
}
