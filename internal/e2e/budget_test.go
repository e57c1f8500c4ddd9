package e2e_test

// The record's budget comes from the configuration (`record:`) in every process that writes the
// record: a command that opens it prunes it to the configured age, not to the built-in 14 days.

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandscope/internal/e2e"
	_ "sandscope/record" // the record's SQLite driver, to age and count its events
)

func TestE2ERecordKeepsWhatTheConfigSays(t *testing.T) {
	dir := t.TempDir()
	env := e2e.Env(t, dir)
	state := filepath.Join(dir, "state")
	e2e.StartServe(t, env, state)
	exec := func(what string) {
		t.Helper()
		if out, code := e2e.RunIn(t, env, "exec", "keep", "--", "sh", "-c", "echo "+what); code != 0 {
			t.Fatalf("exec %s: exit %d\n%s", what, code, out)
		}
	}
	exec("first")
	files, _ := filepath.Glob(filepath.Join(state, "sandscope", "record", "*.db"))
	if len(files) != 1 {
		t.Fatalf("want one record after the first exec, have %v", files)
	}
	db, err := sql.Open("sqlite", files[0]+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	old := func() (n int) {
		t.Helper()
		cutoff := time.Now().Add(-2 * time.Hour).UnixNano()
		if err := db.QueryRow("SELECT COUNT(*) FROM events WHERE time < ?", cutoff).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// the first run's events as if they were three hours old
	if _, err := db.Exec("UPDATE events SET time = time - ?", int64(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	aged := old()
	if aged == 0 {
		t.Fatal("the first exec recorded no event")
	}

	exec("second") // the built-in budget keeps 14 days
	if n := old(); n != aged {
		t.Fatalf("without a configured budget, %d of the %d three-hour-old events are left", n, aged)
	}

	cfg := filepath.Join(dir, "config", "sandscope", "config.yaml")
	if err := os.WriteFile(cfg, []byte("record:\n  keep: 1h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := e2e.RunIn(t, env, "config"); code != 0 || !strings.Contains(out, "record.keep") || !strings.Contains(out, "1h0m0s") {
		t.Fatalf("sandscope config does not show the record's keep from the file: exit %d\n%s", code, out)
	}
	exec("third")
	if n := old(); n != 0 {
		t.Fatalf("with record.keep 1h, %d events older than two hours are left", n)
	}
	var recent int
	if err := db.QueryRow("SELECT COUNT(*) FROM events").Scan(&recent); err != nil || recent == 0 {
		t.Fatalf("the later runs' events are gone too (%d, %v)", recent, err)
	}
}
