// Package record keeps what sandscope has observed on a bridge, per sandbox: sandbox snapshots and
// incarnation boundaries with their evidence, every process and terminal ever seen with its launch,
// state changes with the evidence that decided them, every stream event a follower or terminal
// connection produced, captured output, and the user's own actions with their outcome — with times
// on all of it.
//
// The record is an SQLite database (modernc.org/sqlite, no cgo) per bridge under the XDG state
// directory; the bytes of captured output are kept beside it, in append-only segment files
// (<record>.output/) its rows point into, written once (segments.go). Observations are stored as
// they were made (Event); what a screen shows is a fold of a sandbox's events (State), so a
// restart shows the same timeline, with entries of earlier runs marked as such. A long history's
// fold is kept beside its events (snapshot.go): a state is read as that fold and the events after
// it, not from the first event again. Writes are queued and committed in batches by one goroutine: the record never
// slows a stream down, and a crash costs at most the last batch. The package knows nothing of
// Bubble Tea: the screens, the commands and the report read it.
package record
