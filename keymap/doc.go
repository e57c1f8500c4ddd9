// Package keymap holds sandscope's key bindings: one KeyMap of bubbles key.Bindings with help text,
// the subset each screen uses (ShortHelp/FullHelp), user overrides applied once at start, and a
// Markdown rendering of the whole table for the README.
//
// It must never hold package-level mutable state (every KeyMap is built by New and owned by its
// caller) and never match keys itself: screens call key.Matches with these bindings.
package keymap
