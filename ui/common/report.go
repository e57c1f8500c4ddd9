package common

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/record"
)

// WriteReport writes the triage report of a sandbox (entity "": the whole sandbox; else a process
// or terminal) from the record to ctx.ReportDir, Markdown beside JSON, and says in the status area
// the absolute path it wrote.
func WriteReport(ctx *Context, sandbox, entity string) tea.Cmd {
	rec, dir := ctx.Record, ctx.ReportDir
	if rec == nil || dir == "" {
		return Status(Warn, "no report: nothing is recorded (sandscope runs without a state directory)")
	}
	kind := "remote"
	if ctx.Local {
		kind = "local (embedded or sandscope serve)"
	}
	o := record.ReportOptions{Sandbox: sandbox, Entity: entity, Version: ctx.Version, Kind: kind, Dialect: dialectOf(ctx), Now: ctx.Clock()}
	return func() tea.Msg {
		rep, err := rec.BuildReport(o)
		if err != nil {
			return StatusMsg{Level: Error, Text: SanitizeText("report: " + err.Error())}
		}
		abs, err := filepath.Abs(dir)
		if err == nil {
			err = os.MkdirAll(abs, 0o700)
		}
		if err != nil {
			return StatusMsg{Level: Error, Text: SanitizeText("report: " + err.Error())}
		}
		name := sandbox
		if entity != "" {
			name += "-" + entity
		}
		name = strings.Map(func(r rune) rune {
			if r == '/' || r < ' ' {
				return '_'
			}
			return r
		}, name)
		base := filepath.Join(abs, fmt.Sprintf("%s-%s", name, o.Now.UTC().Format("20060102T150405Z")))
		j, err := rep.JSON()
		if err == nil {
			err = os.WriteFile(base+".json", j, 0o600)
		}
		if err == nil {
			err = os.WriteFile(base+".md", rep.Markdown(), 0o600)
		}
		if err != nil {
			return StatusMsg{Level: Error, Text: SanitizeText("report: " + err.Error())}
		}
		return StatusMsg{Level: Info, Text: SanitizeText("wrote the report to " + base + ".md (and .json)")}
	}
}

// dialectOf names the API the bridge speaks, as its document said when the driver was opened.
func dialectOf(ctx *Context) string {
	if ctx.Driver == nil {
		return "unknown"
	}
	if d := ctx.Driver.Capabilities().Dialect; d != "" {
		return string(d)
	}
	return string(client.DialectPreview) // no document: the preview API, as the client assumes
}
