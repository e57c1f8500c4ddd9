package localbridge_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sandscope/localbridge"
)

func TestLoadOrCreateToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "token")
	tok, err := localbridge.LoadOrCreateToken(path)
	if err != nil || len(tok) < 32 {
		t.Fatalf("create: %q %v", tok, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v %v", fi.Mode(), err)
	}
	again, err := localbridge.LoadOrCreateToken(path)
	if err != nil || again != tok {
		t.Fatalf("reload: %v", err)
	}
}

func TestDiscovery(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.json")
	d := localbridge.Discovery{URL: "http://127.0.0.1:1", TokenFile: "/x/token", PID: os.Getpid()}
	if err := localbridge.WriteDiscovery(path, d); err != nil {
		t.Fatal(err)
	}
	got, err := localbridge.ReadDiscovery(path)
	if err != nil || got != d {
		t.Fatalf("read: %+v %v", got, err)
	}
	d.PID = 1 << 22 // above the default pid_max: never a live process
	if err := localbridge.WriteDiscovery(path, d); err != nil {
		t.Fatal(err)
	}
	if _, err := localbridge.ReadDiscovery(path); !errors.Is(err, localbridge.ErrStaleDiscovery) {
		t.Fatalf("stale: %v", err)
	}
}

func TestNewRefusesUnsafeConfig(t *testing.T) {
	if _, err := localbridge.New(localbridge.Config{Root: t.TempDir()}); err == nil {
		t.Fatal("accepted an empty token")
	}
	s, err := localbridge.New(localbridge.Config{Root: t.TempDir(), Token: "t", Listen: "0.0.0.0:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil {
		t.Fatal("listened on a non-loopback address without AllowNonLoopback")
	}
}
