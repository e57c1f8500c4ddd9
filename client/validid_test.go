package client

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// The ID checks are loops; they must accept exactly what the bridge's patterns accept.
func TestValidIDsMatchPatterns(t *testing.T) {
	sandbox := regexp.MustCompile(`^[a-z2-7]{1,128}$`)
	session := regexp.MustCompile(`^[a-zA-Z0-9._-]{1,128}$`)
	const alphabet = "abcxyzAZ0127389._-/\n\x00é"
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 50000; i++ {
		n := rng.IntN(140)
		if i%3 == 0 {
			n = 120 + rng.IntN(16)
		}
		b := make([]byte, 0, n)
		for len(b) < n {
			if i%2 == 0 {
				b = append(b, "abcdefghijklmnopqrstuvwxyz234567"[rng.IntN(32)])
			} else {
				b = append(b, alphabet[rng.IntN(len(alphabet))])
			}
		}
		id := string(b)
		if got, want := ValidSandboxID(id), sandbox.MatchString(id); got != want {
			t.Fatalf("ValidSandboxID(%q) = %v, pattern says %v", id, got, want)
		}
		if got, want := ValidSessionID(id), session.MatchString(id) && !containsDotDot(id); got != want {
			t.Fatalf("ValidSessionID(%q) = %v, pattern says %v", id, got, want)
		}
	}
	for _, id := range []string{"", "a", "abc\n", "\nabc", "ab-c"} {
		if ValidSandboxID(id) != sandbox.MatchString(id) {
			t.Fatalf("%q", id)
		}
	}
}

func containsDotDot(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '.' && s[i+1] == '.' {
			return true
		}
	}
	return false
}
