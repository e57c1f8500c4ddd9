package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// metrics are one benchmark's reported figures by unit ("ns/op", "MB/s", "ratio", …).
type metrics map[string]float64

// goBench runs the Go benchmarks of pkg matching pattern and returns their metrics by name
// (without the -GOMAXPROCS suffix), e.g. "BenchmarkCat64MiB/coloured".
func (e *env) goBench(pkg, pattern, benchtime string, extra ...string) (map[string]metrics, error) {
	bin, err := e.testBinary(pkg)
	if err != nil {
		return nil, err
	}
	args := append([]string{"-test.run", "^$", "-test.bench", pattern, "-test.benchtime", benchtime,
		"-test.count", "1", "-test.timeout", "30m"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = filepath.Join(e.repo, pkg)
	cmd.Env = e.cleanEnv(filepath.Join(e.tmp, "xdg-gotest"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t := time.Now()
	err = cmd.Run()
	if e.verbose {
		fmt.Fprintf(os.Stderr, "%s (%v)\n%s", strings.Join(cmd.Args, " "), time.Since(t).Round(time.Millisecond), out.String())
	}
	res := parseBench(out.Bytes())
	if err != nil {
		return res, fmt.Errorf("%s -bench %s: %v: %s", pkg, pattern, err, lastLines(out.String(), 6))
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("%s -bench %s: no result: %s", pkg, pattern, lastLines(out.String(), 6))
	}
	return res, nil
}

// testBinary compiles pkg's tests once.
func (e *env) testBinary(pkg string) (string, error) {
	if b, ok := e.testBins[pkg]; ok {
		return b, nil
	}
	name := strings.NewReplacer("/", "_", ".", "root").Replace(strings.TrimPrefix(pkg, "./")) + ".test"
	bin := filepath.Join(e.tmp, name)
	e.logf("compiling the benchmarks of %s", pkg)
	if out, err := exec.Command("go", "test", "-c", "-o", bin, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go test -c %s: %v\n%s", pkg, err, out)
	}
	e.testBins[pkg] = bin
	return bin, nil
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+\d+\s+(.*)$`)

// parseBench reads `go test -bench` output: "BenchmarkX/sub-2  3  123 ns/op  1.05 ratio …".
func parseBench(out []byte) map[string]metrics {
	res := map[string]metrics{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		f := strings.Fields(m[3])
		ms := metrics{}
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			ms[f[i+1]] = v
		}
		res[m[1]] = ms
	}
	return res
}

// need returns the named metric or an error naming what is missing.
func need(res map[string]metrics, name, unit string) (float64, error) {
	m, ok := res[name]
	if !ok {
		return 0, fmt.Errorf("%s did not report", name)
	}
	v, ok := m[unit]
	if !ok {
		return 0, fmt.Errorf("%s reported no %s", name, unit)
	}
	return v, nil
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " | ")
}
