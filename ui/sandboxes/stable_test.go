package sandboxes

import (
	"strings"
	"testing"

	"sandscope/client"
	"sandscope/record"
	"sandscope/ui/internal/uitest"
)

// On a stable bridge (no list) the screen shows the sandboxes the record holds runs or sessions of.
func TestStableSandboxesFromTheRecord(t *testing.T) {
	ctx := uitest.Context(t, uitest.NewBridge(), 120, 20)
	rec, err := record.Open(record.Options{Dir: t.TempDir(), Bridge: "http://stable", Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	_ = rec.UpdateStable("ran-here", func(sb *record.StableSandbox) { sb.UseSession("dev", true, uitest.T0) })
	ctx.Record = rec
	c, err := client.New("http://127.0.0.1:1", client.WithToken("x"))
	if err != nil {
		t.Fatal(err)
	}
	ctx.Stable = c.Stable()
	m := New(ctx)
	m.SetSize(120, 20)
	m.syncList()
	if v := m.View(); !strings.Contains(v, "ran-here") || !strings.Contains(v, "recorded") {
		t.Errorf("the recorded sandbox is missing:\n%s", v)
	}
	ctx.Stable = nil
	if m := New(ctx); m.find("ran-here") != nil {
		t.Error("a preview bridge lists the stable record's sandboxes")
	}
}
