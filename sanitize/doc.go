// Package sanitize makes untrusted bytes (process output, terminal titles, strings from server JSON)
// safe to put on sandscope's screen.
//
// What survives: printable text, tabs expanded to spaces, and (unless Options.StripSGR) SGR colour
// sequences, re-emitted in a normalised form without "conceal" (SGR 8); an SGR longer than 256 bytes
// is dropped. Everything else that a terminal
// would act on is removed or shown as visible text, in one consistent notation:
//
//   - complete escape sequences other than SGR — CSI cursor moves, erases, modes and queries; OSC titles
//     (0/1/2), hyperlinks (8), clipboard (52) and every other OSC; DCS, APC, PM and SOS strings; charset
//     selection and other ESC-intermediate sequences; single ESC-x — are removed (the text between an
//     OSC 8 link's opening and closing is ordinary text and stays). With Options.ShowEscapes they are
//     shown instead, ESC written as "^[" and the rest as text.
//   - a malformed or unterminated sequence (interrupted by a control, a non-ASCII character or the end of
//     the line) is always shown: "^[" followed by what was collected, then the interrupting character is
//     processed normally. A line therefore never hides text behind an unterminated sequence.
//   - C0 controls and DEL are shown in caret notation ("^[", "^M", "^G", "^?"); TAB expands to the next
//     stop; LF ends a line in Stream and is shown as "^J" by the one-line functions; a CR directly before
//     LF is dropped (CRLF line endings).
//   - C1 controls (0x80–0x9f), raw bytes or UTF-8 encoded U+0080–U+009F, are shown as "<9b>" (two
//     lowercase hex digits); 8-bit CSI/OSC introducers therefore never start a sequence.
//   - other invalid UTF-8 becomes U+FFFD; bidi embedding, override and isolate characters
//     (U+202A–U+202E, U+2066–U+2069) are shown as "<U+202E>".
//
// Output is valid UTF-8, holds no C0 or C1 control, and holds ESC only inside complete SGR sequences.
// Lines are capped at Options.MaxRunes visible runes for display; the caller keeps the full bytes.
// Stream carries SGR state across lines: each emitted line starts with the colours still active and ends
// with a reset, so every line can be drawn on its own. Nothing else crosses an LF, so a line can be
// rebuilt later from its bytes alone: Line.Carry is the state it began with, Stream.Reset restores it,
// and Stream.Skim follows a stream without making the text of the lines it completes.
//
// Tests: table tests per sequence family, and `go test -fuzz FuzzSanitize ./sanitize/` (seed corpus in
// testdata/fuzz) checks the output invariants and that chunking never changes the result.
//
// This package must never pass an escape sequence other than SGR through, never panic on any input, and
// never import anything UI-shaped: it is plain text in, plain text out.
package sanitize
