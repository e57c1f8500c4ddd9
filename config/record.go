package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"gopkg.in/yaml.v3"
)

// `record:` — what the record keeps per bridge. Every sandscope that writes a bridge's record (the
// TUI, watch, logs, exec, …) prunes it to these, so they live in the one file all of them read.

// The record's defaults (record.DefaultBudget holds the same; a test keeps them equal).
const (
	DefaultRecordKeep              = 14 * 24 * time.Hour
	DefaultRecordMaxEvents         = 200_000
	DefaultRecordCapturePerProcess = 8 << 20
	DefaultRecordCaptureTotal      = 512 << 20
)

// Limits of `record:`: below them a record forgets what a user still looks at within the day;
// above them a typo asks for more than a disk holds.
const (
	minRecordKeep              = time.Hour
	maxRecordKeep              = 3650 * 24 * time.Hour
	minRecordMaxEvents         = 10_000
	maxRecordMaxEvents         = 100_000_000
	minRecordCapturePerProcess = 256 << 10
	maxRecordCapturePerProcess = 4 << 30
	minRecordCaptureTotal      = 16 << 20
	maxRecordCaptureTotal      = 16 << 40
)

// RecordBudget is `record:` as the file sets it; a zero field is not set.
type RecordBudget struct {
	Keep              time.Duration
	MaxEvents         int
	CapturePerProcess int64
	CaptureTotal      int64
}

var recordKeys = []string{"capturePerProcess", "captureTotal", "keep", "maxEvents"}

func (p *parser) record(c *Config, v *yaml.Node) RecordBudget {
	var b RecordBudget
	if v.Kind != yaml.MappingNode {
		p.errorf(v.Line, "record must be a mapping (keep: 14d, maxEvents: 200000, …), not %s", kindName(v))
		return b
	}
	for _, kv := range pairs(p, v) {
		k, val := kv.key, kv.value
		name := "record." + k.Value
		c.lines[name] = k.Line
		switch k.Value {
		case "keep":
			d, ok := p.keep(name, val)
			if ok && (d < minRecordKeep || d > maxRecordKeep) {
				p.errorf(val.Line, "%s %s is out of range (%s to %s)", name, FormatKeep(d), FormatKeep(minRecordKeep), FormatKeep(maxRecordKeep))
				continue
			}
			b.Keep = d
		case "maxEvents":
			n, ok := p.integer(name, val)
			if ok && (n < minRecordMaxEvents || n > maxRecordMaxEvents) {
				p.errorf(val.Line, "%s %d is out of range (%d to %d)", name, n, minRecordMaxEvents, maxRecordMaxEvents)
				continue
			}
			b.MaxEvents = n
		case "capturePerProcess":
			b.CapturePerProcess = p.sizeIn(name, val, minRecordCapturePerProcess, maxRecordCapturePerProcess)
		case "captureTotal":
			b.CaptureTotal = p.sizeIn(name, val, minRecordCaptureTotal, maxRecordCaptureTotal)
		default:
			p.errorf(k.Line, "unknown record setting %q (known: %s)", k.Value, strings.Join(recordKeys, ", "))
		}
	}
	// one set beside the other's default counts too: a process may not keep more than all of them
	per, total := b.CapturePerProcess, b.CaptureTotal
	if per > 0 || total > 0 {
		if per == 0 {
			per = DefaultRecordCapturePerProcess
		}
		if total == 0 {
			total = DefaultRecordCaptureTotal
		}
		if per > total {
			line := c.lines["record.capturePerProcess"]
			if line == 0 {
				line = c.lines["record.captureTotal"]
			}
			p.errorf(line, "record.capturePerProcess (%s) must not be more than record.captureTotal (%s)", FormatSize(per), FormatSize(total))
		}
	}
	return b
}

// keep reads a length of time: a Go duration ("36h", "90m") or whole days ("14d").
func (p *parser) keep(key string, v *yaml.Node) (time.Duration, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
		p.errorf(v.Line, "%s must be a length of time such as \"14d\" or \"36h\", not %s", key, kindName(v))
		return 0, false
	}
	s := strings.TrimSpace(v.Value)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > int(maxRecordKeep/(24*time.Hour))*10 {
			p.errorf(v.Line, "%s: %q is not a whole number of days", key, v.Value)
			return 0, false
		}
		return time.Duration(n) * 24 * time.Hour, true
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		p.errorf(v.Line, "%s: %q is not a length of time (use a unit: \"14d\", \"36h\", \"90m\")", key, v.Value)
		return 0, false
	}
	return d, true
}

// size reads a number of bytes: a whole number, or one with a unit ("8MiB", "512 MiB", "1GB";
// KiB, MiB, GiB, TiB are powers of 1024, kB, MB, GB, TB of 1000).
func (p *parser) size(key string, v *yaml.Node) (int64, bool) {
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!str" && v.Tag != "!!int") {
		p.errorf(v.Line, "%s must be a size such as \"8MiB\" or a number of bytes, not %s", key, kindName(v))
		return 0, false
	}
	n, err := humanize.ParseBytes(strings.ReplaceAll(v.Value, "_", ""))
	if err != nil || n > 1<<62 {
		p.errorf(v.Line, "%s: %q is not a size (a number of bytes, or with a unit: \"8MiB\", \"1GiB\")", key, v.Value)
		return 0, false
	}
	return int64(n), true
}

// sizeIn is size within lo to hi (0, told, when it is not).
func (p *parser) sizeIn(key string, v *yaml.Node, lo, hi int64) int64 {
	n, ok := p.size(key, v)
	if ok && (n < lo || n > hi) {
		p.errorf(v.Line, "%s %s is out of range (%s to %s)", key, FormatSize(n), FormatSize(lo), FormatSize(hi))
		return 0
	}
	return n
}

// FormatKeep writes a length of time as the file takes it: whole days as "14d", else Go's form.
func FormatKeep(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// FormatSize writes bytes in the largest binary unit that divides them ("8MiB"), else as bytes
// ("1000000 B"), in a form the file takes.
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.name)
		}
	}
	return strconv.FormatInt(n, 10) + " B"
}

// resolveRecord is the file's `record:` over the defaults.
func (c *Config) resolveRecord(file func(string) Source) EffectiveRecord {
	def := Source{Kind: FromDefault}
	e := EffectiveRecord{
		Keep: DefaultRecordKeep, KeepSource: def,
		MaxEvents: DefaultRecordMaxEvents, MaxEventsSource: def,
		CapturePerProcess: DefaultRecordCapturePerProcess, CapturePerProcessSource: def,
		CaptureTotal: DefaultRecordCaptureTotal, CaptureTotalSource: def,
	}
	b := c.Record
	if b.Keep > 0 {
		e.Keep, e.KeepSource = b.Keep, file("record.keep")
	}
	if b.MaxEvents > 0 {
		e.MaxEvents, e.MaxEventsSource = b.MaxEvents, file("record.maxEvents")
	}
	if b.CapturePerProcess > 0 {
		e.CapturePerProcess, e.CapturePerProcessSource = b.CapturePerProcess, file("record.capturePerProcess")
	}
	if b.CaptureTotal > 0 {
		e.CaptureTotal, e.CaptureTotalSource = b.CaptureTotal, file("record.captureTotal")
	}
	return e
}
