// Package logbuf is the log buffer behind sandscope's log view: process output split into sanitised
// lines, interleaved in arrival order with markers (gap, interrupted, resumed, suspect end, ended, lost,
// failed, notes), with history on disk, little memory per line and no lost history.
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
// Storage. Every byte is kept once: the raw bytes of every Data event are appended to one file per
// source and stream, with a compact run list recording arrival order, so SaveRaw reproduces all output
// from the first byte, stdout and stderr of all sources interleaved in arrival order, and
// SaveRawStream reproduces one source's stdout or stderr exactly. Small chunks are gathered into
// 128 KiB writes; a chunk of 64 KiB or more is written as it is. The last bytes written (up to two
// blocks, or a large chunk's last 64 KiB) stay in memory, so the rows drawn while following are read
// without a system call. A final line is not a string but an offset into its raw file: entries are
// kept as segments (a run of lines of one source, consecutive in its raw file, at most 32 KiB, with
// one cursor, one time after the first line and one colour state at each line's start; or one marker,
// kept whole), so memory grows by about 100 bytes per chunk received or 32 KiB of output, not per
// line. Line(i) finds the segment, reads its bytes and builds that one line (times come back from
// Unix nanoseconds); the rows built most recently stay cached (Options.MemLines of them). LineBytes
// returns the full bytes of one line, also when its display text was capped. Close removes the
// directory; New removes directories left behind by processes that died without closing theirs (each
// directory records its owner's pid). Disk errors are reported by Err and never drop entries: bytes a
// raw file cannot take stay in memory from then on, and saves still write every byte.
//
// Display text is sanitised with package sanitize (SGR colour kept unless the options strip it; each
// line self-contained, ending with a reset when coloured; capped at 4,096 runes by default, Capped
// set), and is exactly what one sanitize.Stream per source and stream, fed every chunk as it came,
// would give. Only SGR state crosses an LF (sanitize.Stream.Carry), so ingest needs the sanitiser only
// where that state may change or a line is open: the line a chunk completes, lines holding ESC and the
// partial line at the end, and even there it makes no text (sanitize.Stream.Skim); the other lines are
// counted with bytes.Count. Building a line later resets a sanitiser to the line's carried state and
// feeds it the line's bytes (a line longer than a segment is read in pieces, only until its text is
// capped); a line of printable ASCII with no colour carried in is its own text, cut at the cap.
// TestLazyMatchesEager (and FuzzLazyMatchesEager) compare every field of every entry, LineBytes,
// markers and both saves with the eager model (every line sanitised at ingest) on random streams.
// Plain removes the SGR for a colourless view; Search and Filter match the text with SGR removed.
//
// Concurrency: all methods of Buffer and Filter are safe for concurrent use (one mutex each); Search
// and Filter.Update build 64 entries at a time and release the lock between them, so a long search or
// filter scan on its own goroutine does not stall appends or frames.
//
// The long memory check is a program, not a test: `go run ./ui/logbuf/internal/soak` appends 1 GiB of
// realistic output and reports peak RSS (VmHWM) and whether Line(0) and SaveRaw still reach the first
// byte. The frame-cost benchmark is `go test -run ^$ -bench Frame ./ui/logbuf/`; ingest's is
// `-bench Ingest`.
//
// This package must never drop history silently, never show a byte it did not sanitise, never import
// Bubble Tea, and never leave its files behind after Close.
package logbuf
