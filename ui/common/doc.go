// Package common holds what every sandscope screen shares: the Component contract, the one Context
// passed by pointer (size, styles, keys, the bridge's driver, clock), the messages screens send
// upward, state badges derived from the driver's facts, error descriptions, sanitising of
// untrusted text, and the prompt dialogs. Screens are tested with fake drivers (ui/internal/uitest).
//
// It must never hold package-level mutable state, never call the driver outside a tea.Cmd, never
// ask which dialect a bridge speaks (only Features() and the driver's optional interfaces), and
// never put untrusted bytes on screen without sanitising them.
package common
