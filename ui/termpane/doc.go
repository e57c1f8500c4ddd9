// Package termpane is the embedded terminal pane of the TUI: a charmbracelet/x/vt emulator fed by a
// sandbox terminal connection, drawn inside the layout under a one-line header (terminal ID,
// command, sanitised title, connection state, cursor), with a focus mode that sends keystrokes,
// paste and mouse to the remote PTY and a leave key (the key map's leave_terminal, ctrl-] by
// default) that gives focus back. Unfocused, its keys ask the root to attach full screen,
// interrupt or terminate the terminal (the pane holds no bridge client).
//
// The emulator digests scrolling output far slower than a bridge can deliver it, so it must never
// run on the UI goroutine: a worker goroutine owns it, the UI takes the latest rendered snapshot at
// frame rate, and the header says plainly how many bytes the pane is behind. The emulator's replies
// to queries go to the remote PTY only, never anywhere else; header text never carries raw escapes.
package termpane
