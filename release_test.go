package main

// The release check: .ci/run builds the release archives (scripts/release --snapshot) before the
// tests and runs them with SANDSCOPE_RELEASE_DIST=dist. This test verifies checksums.txt, unpacks
// the linux archive for this machine's architecture and runs the binary in it, and checks that the
// darwin archives hold the same files and a Mach-O binary for their architecture (they are not run).

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/macho"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestReleaseArchive(t *testing.T) {
	dist := os.Getenv("SANDSCOPE_RELEASE_DIST")
	if dist == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but SANDSCOPE_RELEASE_DIST is not: .ci/run builds the archives (scripts/release --snapshot) before the tests")
		}
		t.Skip("checks the output of scripts/release --snapshot: set SANDSCOPE_RELEASE_DIST=dist (.ci/run does)")
	}
	if runtime.GOOS != "linux" {
		t.Skipf("the release archives are linux binaries; this is %s", runtime.GOOS)
	}
	var meta struct{ Version, Commit string }
	b, err := os.ReadFile(filepath.Join(dist, "metadata.json"))
	if err != nil {
		t.Fatalf("no release in %s: %v", dist, err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatalf("metadata.json: %v", err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(meta.Commit) {
		t.Fatalf("the release was built from commit %q: want a full hash", meta.Commit)
	}

	// every archive is in checksums.txt, and every sum there matches its file
	sums := map[string]string{}
	f, err := os.Open(filepath.Join(dist, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("checksums.txt: bad line %q", sc.Text())
		}
		sums[name] = sum
	}
	for _, goos := range []string{"linux", "darwin"} {
		for _, arch := range []string{"amd64", "arm64"} {
			name := "sandscope_" + meta.Version + "_" + goos + "_" + arch + ".tar.gz"
			want, ok := sums[name]
			if !ok {
				t.Errorf("checksums.txt has no %s (it has %v)", name, sums)
				continue
			}
			data, err := os.ReadFile(filepath.Join(dist, name))
			if err != nil {
				t.Error(err)
				continue
			}
			if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != want {
				t.Errorf("%s: sha256 %x, checksums.txt says %s", name, got, want)
			}
		}
	}

	// every archive holds the binary, completions, man pages, README and licences
	contents := func(archive string) string {
		t.Helper()
		dir := t.TempDir()
		unpack(t, filepath.Join(dist, archive), dir)
		for _, p := range []string{"sandscope", "README.md", "completions/sandscope.bash", "completions/_sandscope",
			"completions/sandscope.fish", "manpages/sandscope.1", "manpages/sandscope-logs.1",
			"licenses/github.com/charmbracelet/bubbletea/LICENSE", "licenses/go/LICENSE", "licenses/github.com/spf13/cobra/LICENSE.txt"} {
			if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
				t.Errorf("%s lacks %s", archive, p)
			}
		}
		if _, err := os.Stat("LICENSE"); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "licenses/sandscope/LICENSE")); err != nil {
				t.Errorf("%s lacks sandscope's own LICENSE", archive)
			}
		}
		if man, err := os.ReadFile(filepath.Join(dir, "manpages/sandscope.1")); err == nil && !strings.Contains(string(man), "v"+meta.Version) {
			t.Errorf("sandscope.1 does not name the version v%s:\n%.300s", meta.Version, man)
		}
		return dir
	}
	dir := contents("sandscope_" + meta.Version + "_linux_" + runtime.GOARCH + ".tar.gz")
	for arch, cpu := range map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64} {
		bin := filepath.Join(contents("sandscope_"+meta.Version+"_darwin_"+arch+".tar.gz"), "sandscope")
		f, err := macho.Open(bin)
		if err != nil {
			t.Errorf("darwin %s: %v", arch, err)
			continue
		}
		if f.Cpu != cpu {
			t.Errorf("darwin %s: the binary is a Mach-O for %v", arch, f.Cpu)
		}
		f.Close()
	}

	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(dir, "sandscope"), args...)
		home := t.TempDir()
		cmd.Env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "XDG_STATE_HOME=" + home, "XDG_CACHE_HOME=" + home, "PATH=/usr/bin:/bin", "TERM=dumb"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sandscope %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := run("--version")
	for _, want := range []string{"sandscope version v" + meta.Version + "\n", "commit: " + meta.Commit + "\n", "go:     go"} {
		if !strings.Contains(out, want) {
			t.Errorf("sandscope --version lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "unknown") {
		t.Errorf("sandscope --version leaves something unknown:\n%s", out)
	}
	if out := run("completion", "bash"); !strings.Contains(out, "__start_sandscope") {
		t.Errorf("sandscope completion bash printed %.200q", out)
	}
}

// unpack extracts the tar.gz archive into dir (regular files and directories only).
func unpack(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			t.Fatalf("%s: entry %q leaves the archive", archive, h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				var w *os.File
				if w, err = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, h.FileInfo().Mode().Perm()); err == nil {
					_, err = io.Copy(w, tr)
					if cerr := w.Close(); err == nil {
						err = cerr
					}
				}
			}
		default:
			t.Errorf("%s: unexpected entry %q (type %c)", archive, h.Name, h.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
