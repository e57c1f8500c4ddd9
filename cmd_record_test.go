package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A record that cannot be written (the file size limit plays a full disk) costs logs -f nothing:
// the output is whole, the exit status is the process's ending, and one notice after the output
// says the record could not be written.
func TestLogsFollowWithRecordOnFullDisk(t *testing.T) {
	b, flags := bridgeArgs(t)
	p := startProc(t, b, "sh", "-c", "printf 'out1\\n'; sleep 0.2; printf 'out2\\n'; exit 3")
	bin := sandscopeBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// no file of the child may grow past 512 bytes: the record's database cannot even start
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", `ulimit -f 1 && exec "$0" "$@"`, bin}, append(flags, "logs", "local", p.ID, "-f")...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "XDG_STATE_HOME=" + t.TempDir()}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("exit %d, stderr %q", ee.ExitCode(), stderr.String())
	}
	if stdout.String() != "out1\nout2\n" {
		t.Fatalf("stdout %q", stdout.String())
	}
	errs := stderr.String()
	end := strings.Index(errs, "ended: EXITED 3")
	note := strings.Index(errs, "sandscope: record: ")
	if end < 0 || note < end {
		t.Fatalf("stderr should end the follow, then say the record failed: %q", errs)
	}
}
