// Package sandbox is the sandbox screen, one for every bridge: its tabs and keys come from the
// driver's capabilities, as a page built from the tabs it is given. Processes (titled Runs where
// the bridge lists none: the runs sandscope started) with state badges (RUNNING, EXITED n, KILLED
// sig, TIMED OUT, ERROR code, REPORTED n (unconfirmed), ENDED exit code unknown, INTERRUPTED,
// LOST, STALE, UNKNOWN) fed by the driver's watcher through the record; Terminals with
// driver.Terminals; Sessions with driver.Sessions; the incarnation timeline (reported or
// inferred) with the evidence for each boundary. Actions: exec (in the chosen session), kill with
// a signal picker (driver.Killer), relaunch, open logs (one or several runs), follow all, a
// terminal or the driver's shell, sessions.
//
// It must never show an unconfirmed ending as success, never drop an entry from an earlier
// incarnation (those stay, greyed and labelled STALE), never act on a stale handle (such actions
// are refused with the reason), and, with a driver.Waker, never send a request that starts a
// container before the user agreed to the driver's notice.
package sandbox
