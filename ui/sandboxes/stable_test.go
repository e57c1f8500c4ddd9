package sandboxes

import (
	"strings"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/record"
	"sandscope/ui/internal/uitest"
)

// refreshNow runs one refresh of m and applies its answer.
func refreshNow(t *testing.T, m *Model) {
	t.Helper()
	r, ok := m.refresh()().(refreshMsg)
	if !ok {
		t.Fatal("no refresh answer")
	}
	m.applyRefresh(r)
}

// A sandbox with history in the record is listed (on any bridge, one that cannot list included)
// until the user forgets it; forgetting is itself kept in the record.
func TestRecordedSandboxesAreListedUntilForgotten(t *testing.T) {
	dir := t.TempDir()
	open := func() *record.Record {
		rec, err := record.Open(record.Options{Dir: dir, Bridge: "http://bridge.example", Version: "test", FlushEvery: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	rec := open()
	_ = rec.UpdateStable("ranhere", func(sb *record.StableSandbox) { sb.UseSession("dev", true, time.Now()) })
	rec.Add(record.Event{Sandbox: "seenhere", Source: record.FromWatch, Kind: client.SandboxStarted.String(), Incarnation: client.Incarnation{Number: 2}})
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}

	ctx := uitest.Context(t, uitest.NewBridge(), 120, 20)
	ctx.StateDir = t.TempDir()
	rec = open()
	ctx.Record = rec
	m := New(ctx)
	m.SetSize(120, 20)
	refreshNow(t, m)
	v := m.View()
	for _, id := range []string{"ranhere", "seenhere"} {
		if !strings.Contains(v, id) {
			t.Errorf("the recorded sandbox %s is missing:\n%s", id, v)
		}
	}
	m.forget("seenhere")
	refreshNow(t, m)
	if m.find("seenhere") != nil {
		t.Error("a forgotten sandbox came back")
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}

	// the next start remembers the forgetting, and the persisted known set holds no recorded row
	rec = open()
	defer rec.Close()
	ctx.Record = rec
	m = New(ctx)
	refreshNow(t, m)
	if m.find("seenhere") != nil || m.find("ranhere") == nil {
		t.Errorf("after a restart: seenhere %v ranhere %v", m.find("seenhere") != nil, m.find("ranhere") != nil)
	}
	if ks, _ := m.store.Load(); len(ks) != 0 {
		t.Errorf("recorded rows were persisted in the known set: %+v", ks)
	}
	// new history brings it back
	rec.Add(record.Event{Sandbox: "seenhere", Source: record.FromWatch, Kind: client.SandboxStarted.String(), Incarnation: client.Incarnation{Number: 3}})
	refreshNow(t, m)
	if m.find("seenhere") == nil {
		t.Error("new history did not list the sandbox again")
	}
}
