// Package logview is the log view: it follows one or more processes through the client's resumable
// follower, keeps their output in a disk-backed logbuf.Buffer, and renders only the visible lines.
// The status line tells the stream's state (LIVE, QUIET, RECONNECTING n, SUSPECT END, ENDED, LOST,
// FAILED) with the live cursor, bytes and rate; markers for every interruption, resume, gap, suspect
// end, loss and incarnation change sit in the log where they happened, styled apart from output.
// It searches, filters, jumps between markers, saves raw bytes, copies the cursor (OSC 52, only when
// asked) and renders agent JSONL compactly.
//
// It must never show an ending as success unless the follower says the bridge confirmed it, never
// mix its own notices into process output, and never put unsanitised bytes on screen.
package logview
