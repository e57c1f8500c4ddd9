package common

// Screen is what the root may ask of a screen on its stack: the Component contract plus the
// capabilities every screen declares, so the root never discovers behaviour by type assertion.
// A screen without streams answers Attached with 0 and does nothing on Close and SetFocus.
//
// Screens are pointers: the root keeps the Screen it pushed and ignores the Component that
// Update returns (the same screen).
type Screen interface {
	Component
	// Title is the screen's crumb in the header: "sandboxes", the sandbox ID, "logs", "terminal".
	Title() string
	// Close ends the screen's streams for good (the root does not keep it).
	Close()
	// SetFocus says whether the screen is on top: a screen behind slows its watchers down.
	SetFocus(focused bool)
	// Capturing reports that the screen takes every key (a prompt, a filter being typed, a focused
	// terminal pane): the root then does not act on q, ?, esc or C itself.
	Capturing() bool
	// Prompting reports that a dialog is open over the screen. The root clears the status area
	// when one opens: a message is about what came before, and the dialog's answer brings its own.
	Prompting() bool
	// Attached counts the live streams the screen holds (the quit confirmation counts them).
	Attached() int
	// Back is esc on this screen: it reports whether the screen used it itself (an active filter
	// cleared); when it did not, the root closes the screen.
	Back() bool
}
