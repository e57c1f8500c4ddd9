package themes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltinsValid(t *testing.T) {
	names := BuiltinNames()
	if strings.Join(names, ",") != "dark,high-contrast,light" {
		t.Fatalf("built-ins: %v", names)
	}
	for _, n := range names {
		p, err := Builtin(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if p.Name != n {
			t.Errorf("%s: name field %q", n, p.Name)
		}
		s := New(p, AsciiRenderer())
		for b := Badge(0); b < badgeCount; b++ {
			if got := s.Badge(b).Render("X"); got != "X" {
				t.Errorf("%s: ascii badge %d rendered %q", n, b, got)
			}
		}
	}
}

func TestAutoPicksByBackground(t *testing.T) {
	p, err := Load("auto", "", true)
	if err != nil || p.Name != "dark" {
		t.Fatalf("dark bg: %v %v", p.Name, err)
	}
	p, err = Load("", "", false)
	if err != nil || p.Name != "light" {
		t.Fatalf("light bg: %v %v", p.Name, err)
	}
}

func TestUserThemeDir(t *testing.T) {
	dir := t.TempDir()
	dark, _ := Builtin("dark")
	good := strings.Replace(mustRead(t, "data/dark.json"), `"name": "dark"`, `"name": "mine"`, 1)
	good = strings.Replace(good, dark.Primary, "#123456", 1)
	if err := os.WriteFile(filepath.Join(dir, "mine.json"), []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Load("mine", dir, true)
	if err != nil || p.Primary != "#123456" {
		t.Fatalf("user theme: %+v %v", p, err)
	}
	bad := strings.Replace(good, "#123456", "blue", 1)
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load("bad", dir, true); err == nil || !strings.Contains(err.Error(), "primary") {
		t.Fatalf("bad colour accepted: %v", err)
	}
	if _, err := Load("../etc/passwd", dir, true); err == nil {
		t.Fatal("path escape accepted")
	}
	if _, err := Load("nosuch", dir, true); err == nil {
		t.Fatal("unknown theme accepted")
	}
}

func TestColourStylesEmitColour(t *testing.T) {
	p, _ := Builtin("dark")
	r := NewRenderer(os.Stderr, false)
	r.SetColorProfile(2) // termenv.TrueColor
	s := New(p, r)
	if got := s.Badge(BadgeLost).Render("LOST"); !strings.Contains(got, "\x1b[") {
		t.Fatalf("truecolour badge has no escape: %q", got)
	}
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := builtin.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNoColorEnvStripsColour(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	p, _ := Builtin("dark")
	r := NewRenderer(os.Stderr, false)
	if got := New(p, r).Badge(BadgeRunning).Render("RUNNING"); got != "RUNNING" {
		t.Fatalf("NO_COLOR still styled: %q", got)
	}
}
