package record

import (
	"os"
	"strings"
	"testing"
	"time"

	"sandscope/client"
)

func TestNormalizeURL(t *testing.T) {
	same := []string{
		"http://127.0.0.1:8080",
		"HTTP://127.0.0.1:8080/",
		"http://127.0.0.1:8080//",
		" http://127.0.0.1:8080 ",
		"http://user:secret@127.0.0.1:8080/?x=1#frag",
	}
	for _, u := range same {
		if got := NormalizeURL(u); got != "http://127.0.0.1:8080" {
			t.Errorf("NormalizeURL(%q) = %q", u, got)
		}
	}
	cases := map[string]string{
		"https://Bridge.Example.workers.dev:443/": "https://bridge.example.workers.dev",
		"http://example.com:80/api/../v1/":        "http://example.com/v1",
		"http://[::1]:9000":                       "http://[::1]:9000",
	}
	for in, want := range cases {
		if got := NormalizeURL(in); got != want {
			t.Errorf("NormalizeURL(%q) = %q, want %q", in, got, want)
		}
	}
	if strings.Contains(NormalizeURL("http://u:hunter2@h"), "hunter2") {
		t.Error("credentials kept in the identity")
	}
}

func TestIdentityPrefersTheBridgeID(t *testing.T) {
	if got := Identity(client.Capabilities{BridgeID: "abcdefgh12"}, "http://127.0.0.1:1"); got != "sandscope-bridge:abcdefgh12" {
		t.Errorf("local bridge identity %q", got)
	}
	if got := Identity(client.Capabilities{}, "https://B.example/"); got != "https://b.example" {
		t.Errorf("remote identity %q", got)
	}
}

func TestRememberedIdentity(t *testing.T) {
	dir := t.TempDir()
	if _, ok := LookupIdentity(dir, "http://127.0.0.1:5"); ok {
		t.Fatal("identity known before it was learned")
	}
	if err := RememberIdentity(dir, "http://127.0.0.1:5/", "sandscope-bridge:abcdefgh12"); err != nil {
		t.Fatal(err)
	}
	if got, ok := LookupIdentity(dir, "HTTP://127.0.0.1:5"); !ok || got != "sandscope-bridge:abcdefgh12" {
		t.Fatalf("lookup = %q %v", got, ok)
	}
}

// A record kept under a former name of the bridge becomes the identity's, once.
func TestLegacyRecordIsAdopted(t *testing.T) {
	dir := t.TempDir()
	old, err := Open(Options{Dir: dir, Bridge: "local:/root/sandboxes", FlushEvery: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	old.Add(Event{Sandbox: "demo", Source: FromAction, Kind: "exec", Action: &Action{Kind: "exec", Outcome: "ok"}})
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	// a reader finds it before it is moved
	ro, err := Open(Options{Dir: dir, Bridge: LocalIdentity("abcdefgh12"), Legacy: []string{"local:/root/sandboxes"}, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if evs, _ := ro.Events("demo", ""); len(evs) != 1 {
		t.Fatalf("reader sees %d events, want 1", len(evs))
	}
	ro.Close()
	rec, err := Open(Options{Dir: dir, Bridge: LocalIdentity("abcdefgh12"), Legacy: []string{"local:/root/sandboxes"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	if evs, _ := rec.Events("demo", ""); len(evs) != 1 {
		t.Fatalf("adopted record has %d events, want 1", len(evs))
	}
	if !strings.Contains(strings.Join(rec.Notices(), "; "), "former name") {
		t.Errorf("notices %q", rec.Notices())
	}
	if _, err := os.Stat(FileFor(dir, "local:/root/sandboxes")); !os.IsNotExist(err) {
		t.Errorf("the former file is still there: %v", err)
	}
}
