package config

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestRecordBudgetFromTheFile(t *testing.T) {
	path, c, e := resolvedFile(t, 0o644, "theme: dark\nrecord:\n  keep: 30d\n  maxEvents: 5_000_000\n  capturePerProcess: 64MiB\n  captureTotal: 20 GiB\n")
	r := e.Record
	if r.Keep != 30*24*time.Hour || r.MaxEvents != 5_000_000 || r.CapturePerProcess != 64<<20 || r.CaptureTotal != 20<<30 {
		t.Fatalf("record = %+v", r)
	}
	for name, s := range map[string]Source{"keep": r.KeepSource, "maxEvents": r.MaxEventsSource, "capturePerProcess": r.CapturePerProcessSource, "captureTotal": r.CaptureTotalSource} {
		if s.Kind != FromFile || s.File != path || s.Line != c.Line("record."+name) || s.Line < 3 {
			t.Fatalf("record.%s source = %+v", name, s)
		}
	}
	rows := map[string]Row{}
	for _, row := range e.Rows() {
		rows[row.Setting] = row
	}
	for setting, want := range map[string]string{"record.keep": "30d", "record.maxEvents": "5000000", "record.capturePerProcess": "64MiB", "record.captureTotal": "20GiB"} {
		if got := rows[setting]; got.Value != want || got.Source.Kind != FromFile {
			t.Fatalf("row %s = %+v, want %q from the file", setting, got, want)
		}
	}
}

func TestRecordBudgetDefaultsAndPartialSettings(t *testing.T) {
	e, err := (&Config{lines: map[string]int{}}).Resolve(Flags{}, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	r := e.Record
	if r.Keep != DefaultRecordKeep || r.MaxEvents != DefaultRecordMaxEvents || r.CapturePerProcess != DefaultRecordCapturePerProcess || r.CaptureTotal != DefaultRecordCaptureTotal {
		t.Fatalf("defaults = %+v", r)
	}
	if r.KeepSource.Kind != FromDefault || r.CaptureTotalSource.Kind != FromDefault {
		t.Fatalf("default sources = %+v", r)
	}
	// one setting changes that one only; the rows show the defaults in the file's own notation
	_, _, e = resolvedFile(t, 0o644, "record:\n  keep: 36h\n  captureTotal: 1073741824\n")
	r = e.Record
	if r.Keep != 36*time.Hour || r.CaptureTotal != 1<<30 || r.MaxEvents != DefaultRecordMaxEvents || r.MaxEventsSource.Kind != FromDefault {
		t.Fatalf("partial = %+v", r)
	}
	var text []string
	for _, row := range e.Rows() {
		if strings.HasPrefix(row.Setting, "record.") {
			text = append(text, row.Setting+"="+row.Value+" ("+string(row.Source.Kind)+")")
		}
	}
	want := "record.keep=36h0m0s (file) record.maxEvents=200000 (default) record.capturePerProcess=8MiB (default) record.captureTotal=1GiB (file)"
	if got := strings.Join(text, " "); got != want {
		t.Fatalf("rows:\n got %s\nwant %s", got, want)
	}
}

// Every bad `record:` value is an error at its line, naming the setting and what it takes.
func TestRecordBudgetErrors(t *testing.T) {
	cases := []struct {
		name, text string
		line       int
		want       string
	}{
		{"shape", "record: 14d\n", 1, "record must be a mapping"},
		{"unknown", "record:\n  keepDays: 3\n", 2, `unknown record setting "keepDays" (known: capturePerProcess, captureTotal, keep, maxEvents)`},
		{"keep number", "record:\n  keep: 14\n", 2, `record.keep must be a length of time such as "14d"`},
		{"keep text", "record:\n  keep: a fortnight\n", 2, `record.keep: "a fortnight" is not a length of time`},
		{"keep days", "record:\n  keep: 1.5d\n", 2, `record.keep: "1.5d" is not a whole number of days`},
		{"keep short", "record:\n  keep: 10m\n", 2, "record.keep 10m0s is out of range (1h0m0s to 3650d)"},
		{"keep long", "record:\n  keep: 4000d\n", 2, "record.keep 4000d is out of range"},
		{"keep negative", "record:\n  keep: -2h\n", 2, "record.keep -2h0m0s is out of range"},
		{"events type", "record:\n  maxEvents: many\n", 2, "record.maxEvents must be a whole number"},
		{"events low", "record:\n  maxEvents: 100\n", 2, "record.maxEvents 100 is out of range (10000 to 100000000)"},
		{"events high", "record:\n  maxEvents: 200_000_000\n", 2, "record.maxEvents 200000000 is out of range"},
		{"size text", "record:\n  capturePerProcess: big\n", 2, `record.capturePerProcess: "big" is not a size`},
		{"size type", "record:\n  captureTotal: [1]\n", 2, "record.captureTotal must be a size such as \"8MiB\""},
		{"size negative", "record:\n  captureTotal: -5MiB\n", 2, `record.captureTotal: "-5MiB" is not a size`},
		{"size low", "record:\n  capturePerProcess: 1KiB\n", 2, "record.capturePerProcess 1KiB is out of range (256KiB to 4GiB)"},
		{"size high", "record:\n  captureTotal: 100TiB\n", 2, "record.captureTotal 100TiB is out of range (16MiB to 16TiB)"},
		{"size decimal", "record:\n  captureTotal: 1MB\n", 2, "record.captureTotal 1000000 B is out of range (16MiB to 16TiB)"},
		{"size zero", "record:\n  captureTotal: 0\n", 2, "record.captureTotal 0 B is out of range"},
		{"per process over total", "record:\n  captureTotal: 32MiB\n  capturePerProcess: 64MiB\n", 3, "record.capturePerProcess (64MiB) must not be more than record.captureTotal (32MiB)"},
		{"per process over the default total", "record:\n  capturePerProcess: 1GiB\n", 2, "record.capturePerProcess (1GiB) must not be more than record.captureTotal (512MiB)"},
		{"total under the default per process", "record:\n  captureTotal: 16MiB\n  maxEvents: 20000\n", 2, ""},
		{"duplicate", "record:\n  keep: 1d\n  keep: 2d\n", 3, `"keep" is set twice (first on line 2)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, 0o644, tc.text)
			_, err := Load(path)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Load succeeded; want an error")
			}
			prefix := path + ":" + strconv.Itoa(tc.line) + ": "
			for _, line := range strings.Split(err.Error(), "\n") {
				if strings.HasPrefix(line, prefix) && strings.Contains(line, tc.want) {
					return
				}
			}
			t.Fatalf("error %q: want %q on line %d", err, tc.want, tc.line)
		})
	}
}

// What `sandscope config` shows of a size, the file takes back as the same size.
func TestFormatSizeReadsBack(t *testing.T) {
	p := &parser{}
	for _, n := range []int64{0, 1, 1000, 1 << 10, 1000000, 8 << 20, 8<<20 + 1, 512 << 20, 3 << 30, 16 << 40} {
		text := FormatSize(n)
		got, ok := p.size("x", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: text})
		if !ok || got != n {
			t.Fatalf("FormatSize(%d) = %q, read back as %d (%v)", n, text, got, p.errs)
		}
	}
}

// The same for a length of time.
func TestFormatKeepReadsBack(t *testing.T) {
	p := &parser{}
	for _, d := range []time.Duration{time.Hour, 36 * time.Hour, 14 * 24 * time.Hour, 90 * time.Minute, 3650 * 24 * time.Hour} {
		text := FormatKeep(d)
		got, ok := p.keep("x", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: text})
		if !ok || got != d {
			t.Fatalf("FormatKeep(%v) = %q, read back as %v (%v)", d, text, got, p.errs)
		}
	}
}
