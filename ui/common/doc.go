// Package common holds what every sandscope screen shares: the Component contract, the one Context
// passed by pointer (size, styles, keys, bridge, clock), the messages screens send upward, the
// Bridge seam over the client (so screens are tested with fakes), state badges derived from the
// client's facts, error descriptions, sanitising of untrusted text, and the prompt dialogs.
//
// It must never hold package-level mutable state, never call the bridge outside a tea.Cmd, and
// never put untrusted bytes on screen without sanitising them.
package common
