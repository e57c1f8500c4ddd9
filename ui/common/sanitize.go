package common

import "sandscope/sanitize"

// SanitizeText makes one untrusted string (a command line, a bridge message, a cwd) safe for the
// screen: every escape sequence removed, controls shown visibly, invalid UTF-8 replaced.
func SanitizeText(s string) string {
	return sanitize.String(s, sanitize.Options{StripSGR: true, TabWidth: 4})
}
