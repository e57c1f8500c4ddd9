// Package logbuf is the log buffer behind sandscope's log view: process output split into sanitised
// lines, interleaved in arrival order with markers (gap, interrupted, resumed, suspect end, ended, lost,
// failed, notes), with bounded memory and no lost history.
//
// Model. A Buffer holds entries 0..Len()-1. Entries below Len()-Partials() are final and never change.
// The last Partials() entries are partial lines — output of a source and stream not ended by LF yet —
// in the order their first byte arrived; their text may still grow, and when one completes it becomes
// the first non-final index, so the tail may reorder when several sources have partial lines at once.
// An output line carries the cursor of the chunk that completed it and the time of the chunk that began
// it. A marker that breaks the byte stream (Gap, Ended, Lost, Failed) first ends its source's partial
// lines (NoEOL set); a marker that promises continuity (Interrupted, Reconnecting, Resumed, Quiet,
// SuspectEnd, Note) is placed before them and the partial line keeps growing. Append(source, events…)
// turns client.LogEvents into entries and skips Quiet and Reconnecting (status-line states, not
// history); use AddMarker to place them anyway.
//
// Memory. The most recent Options.MemLines entries live in memory. Older ones are encoded in pages of
// 64 and appended to a file in a private directory under Options.Dir; a sparse index of page offsets
// (8 bytes per 64 lines) and an LRU of decoded pages make Line(i) read one page at most. A line whose
// display text is its raw bytes unchanged (sanitize's Verbatim) is not stored twice: its text is read
// back from the raw file, so history costs little more disk than the output itself. The raw bytes of
// every Data event are appended to one file per source and stream, with a compact run list recording
// arrival order, so SaveRaw reproduces all output from the first byte, stdout and stderr of all sources
// interleaved in arrival order, and SaveRawStream reproduces one source's stdout or stderr exactly.
// LineBytes returns the full bytes of one line, also when its display text was capped. Close removes
// the directory; New removes directories left behind by processes that died without closing theirs
// (each directory records its owner's pid). Disk errors are reported by Err and never drop entries:
// if spilling fails, entries stay in memory from then on; if writing raw bytes fails, SaveRaw and
// SaveRawStream still write what they have and return an error saying the save is incomplete.
//
// Display text is sanitised at ingest with package sanitize (SGR colour kept unless the options strip
// it; each line self-contained, ending with a reset when coloured; capped at 4,096 runes by default,
// Capped set). Plain removes the SGR for a colourless view; Search and Filter match the text with SGR
// removed.
//
// Concurrency: all methods of Buffer and Filter are safe for concurrent use (one mutex each); Search
// and Filter.Update read spilled pages without holding them, so a long search or filter scan on its own
// goroutine does not stall appends or frames.
//
// The long memory check is a program, not a test: `go run ./ui/logbuf/internal/soak` appends 1 GiB of
// realistic output and reports peak RSS (VmHWM) and whether Line(0) and SaveRaw still reach the first
// byte. The frame-cost benchmark is `go test -run ^$ -bench Frame ./ui/logbuf/`.
//
// This package must never drop history silently, never show a byte it did not sanitise, never import
// Bubble Tea, and never leave its files behind after Close.
package logbuf
