// Package sandboxes is the sandboxes screen: every sandbox sandscope knows on the current bridge
// (the local bridge's list plus those created, opened or added here, persisted per bridge) with its
// state, incarnation, process and terminal counts and when it was last seen; and the actions create,
// add by ID, forget, delete, and on the local bridge stop and replace.
//
// It must never start anything in a sandbox by itself: refreshing uses only non-waking lookups.
package sandboxes
