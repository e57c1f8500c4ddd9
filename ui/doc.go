// Package ui is sandscope's terminal UI: the root Bubble Tea model that owns layout and focus,
// routes messages to the screens (sandboxes, sandbox, log view, terminal pane), and draws the
// header (bridge, local or remote, context), the status area (errors such as unauthorized,
// unreachable with a retry countdown, no capacity) and the help overlay.
//
// It must never block the UI goroutine on the bridge (every call is a tea.Cmd), never keep
// package-level state, and never show a token.
package ui
