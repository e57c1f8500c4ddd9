package client

import "strings"

// shortIDLen is how many characters of an ID the screens and `logs --all` show by default.
const shortIDLen = 8

// ShortID is the part of an ID that tells it apart from its neighbours, at most 8 characters: the
// first 8 of a bridge's ID (often a UUID), and the random tail of a recorded run's ID, whose head
// is its launch time ("20261202T161500Z-1a2b3c4d" → "1a2b3c4d": every run of a day shares the
// head).
func ShortID(id string) string {
	if tail, ok := recordedRunTail(id); ok {
		id = tail
	}
	if len(id) > shortIDLen {
		return id[:shortIDLen]
	}
	return id
}

// IDMatches reports whether want names id as a person would copy it from a screen: the whole ID,
// a prefix of it, or, for a recorded run, a prefix of its random tail (what ShortID shows).
func IDMatches(id, want string) bool {
	if want == "" {
		return false
	}
	if strings.HasPrefix(id, want) {
		return true
	}
	tail, ok := recordedRunTail(id)
	return ok && strings.HasPrefix(tail, want)
}

// recordedRunTail returns the random tail of a recorded run's ID (see Stable.Run).
func recordedRunTail(id string) (string, bool) {
	stamp, tail, ok := strings.Cut(id, "-")
	if !ok || len(stamp) != len(runIDTime) || stamp[8] != 'T' || stamp[len(stamp)-1] != 'Z' || tail == "" {
		return "", false
	}
	for _, c := range stamp[:8] + stamp[9:15] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return tail, true
}
