package driver

// Additions of the stable driver to the shared vocabulary (additive: nothing above changed).

// StateLost: the run's container is gone with its files (stable: inferred from the recorder's
// files and sandscope's container marker). Shown "LOST (inferred)". The stable driver's Watch
// reports the change as ProcessVanished with the evidence; Runs keeps listing the run in this
// state so the screens can show it.
//
// How the stable driver words a recorded run (client.RunState → state word):
//
//	RUNNING, STILL RUNNING      → running
//	EXITED (recorder confirmed) → exited, Exit.Code
//	UNCONFIRMED with a code     → reported, Exit.Code (the stream's; nothing confirms it)
//	UNCONFIRMED without a code  → ended (the recorder saw it end without a status)
//	INTERRUPTED                 → interrupted
//	ERROR                       → error, Error{Code, Message}
//	LOST                        → lost
const StateLost = "lost"

// Stable cursors. A stable run's output has no bridge cursor: the driver's cursor is the number
// of bytes delivered of each stream, "s1:<stdout bytes>:<stderr bytes>". The same positions index
// the recorder's files (<run>/out and <run>/err), so a cursor from a live follow resumes a follow
// that reads the files, and the other way round. Bytes the stream decoded as text (U+FFFD for
// bytes that were not UTF-8) can make the two differ in length; the files are then the exact
// output.
const stableCursorPrefix = "s1:"
