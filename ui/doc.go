// Package ui is sandscope's terminal UI: the root Bubble Tea model that owns layout and focus,
// routes messages to the screens (sandboxes, sandbox, log view, terminal pane), and draws the
// header (bridge, local or remote, context), the status area (errors such as unauthorized,
// unreachable with a retry countdown, no capacity) and the help overlay. The root also hands the
// whole screen to a terminal (full-screen attach through tea.Exec) and takes it back, switches the
// whole UI to another context's bridge (every screen and stream of the old one closed), and offers
// the demo scene on a first run.
//
// It must never block the UI goroutine on the bridge (every call is a tea.Cmd), never keep
// package-level state, and never show a token.
package ui
