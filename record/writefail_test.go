package record

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A disk that fills up under the record: writes fail, the failure is signalled with the error and
// a count of what was not kept, Add never blocks or panics, and Close still returns. The file size
// limit (RLIMIT_FSIZE) plays the full disk, in a child process so that it binds nothing else.
func TestWriteFailureOnFullDiskIsReported(t *testing.T) {
	if dir := os.Getenv("SANDSCOPE_FULL_DISK_CHILD"); dir != "" {
		fullDiskChild(t, dir)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestWriteFailureOnFullDiskIsReported$", "-test.v")
	cmd.Env = append(os.Environ(), "SANDSCOPE_FULL_DISK_CHILD="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "FULL-DISK-OK") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func fullDiskChild(t *testing.T, dir string) {
	r := open(t, dir)
	// from now on no file may grow past 256 KiB: the record's WAL soon cannot
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 256 << 10, Max: 256 << 10}); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 16<<10)
	deadline := time.After(30 * time.Second)
	for i := 0; ; i++ {
		start := time.Now()
		r.Add(Event{Sandbox: "demo", Source: FromStream, Kind: "interrupted", Entity: Process, EntityID: "p", Reason: big})
		if d := time.Since(start); d > time.Second {
			t.Fatalf("Add blocked for %v", d)
		}
		select {
		case <-r.WriteFailed():
			err := r.Err()
			if err == nil || !strings.Contains(err.Error(), "record") {
				t.Fatalf("write failed, error %v", err)
			}
			if r.Unsaved() == 0 {
				t.Fatal("a failed write kept everything?")
			}
			t.Logf("after %d events: %v; %d not kept", i, err, r.Unsaved())
			_ = r.Close()
			t.Log("FULL-DISK-OK")
			return
		case <-deadline:
			t.Fatalf("no write failure signalled after %d events of 16 KiB", i)
		default:
			time.Sleep(2 * time.Millisecond)
		}
	}
}
