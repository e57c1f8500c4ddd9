// Package sandbox is the sandbox screen: the processes and terminals of one sandbox with state
// badges (RUNNING, EXITED n, KILLED sig, TIMED OUT, ERROR code, LOST, STALE, UNKNOWN), driven by
// the client's watcher, and the incarnation timeline with the evidence for each boundary. Actions:
// exec, kill with a signal picker, relaunch in the current incarnation, open logs (one or several
// processes), open a terminal.
//
// It must never show an unconfirmed ending as success, never drop an entry from an earlier
// incarnation (those stay, greyed and labelled STALE), and never act on a stale handle: such
// actions are refused with the reason.
package sandbox
