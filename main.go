// The runtime's check, once a second, for a changed CPU limit of the container would wake an idle
// TUI every second for nothing it needs: GOMAXPROCS is still set from the limit at start.
//
//go:debug updatemaxprocs=0

// Command sandscope is a terminal UI and command line for Cloudflare Sandbox bridges: it lists
// sandboxes, processes and terminals, follows logs with resume cursors, attaches to terminals, and
// shows container replacements, stale handles and interrupted streams plainly.
//
// main.go only starts the command line: the commands live in packages under internal/cli (one
// per command group, made from one cmdutil.Factory), and delegate to the packages that hold the
// logic.
package main

import "sandscope/internal/cli/root"

func main() { root.Main() }
