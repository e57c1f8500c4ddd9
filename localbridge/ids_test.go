package localbridge

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// The ID checks are loops; they accept exactly what the bridge's regexps accepted.
func TestIDChecksMatchRegexps(t *testing.T) {
	sandboxRE := regexp.MustCompile(`^[a-z2-7]{1,128}$`)
	tokenRE := regexp.MustCompile(`^[a-zA-Z0-9._-]{1,128}$`)
	inputs := []string{"", "a", "z", "2", "7", "1", "8", "0", "9", "A", "abc234567", "abc\n", "\nabc", "ab c",
		"a.b", "a_b", "a-b", "..", ".", "a/b", "a\x00", "é", "aé", "\xff", "a\xffb", "abc$", "^abc",
		strings.Repeat("a", 128), strings.Repeat("a", 129), strings.Repeat("é", 64), strings.Repeat("Z", 128) + "\n"}
	for c := 0; c < 256; c++ {
		inputs = append(inputs, string(rune(c)), "ab"+string([]byte{byte(c)}), string([]byte{byte(c)})+"ab")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "abcxyzABCXYZ0123456789._-/ \n\x00\xc3\xa9\xff"
	for i := 0; i < 20000; i++ {
		n := rng.IntN(140)
		if rng.IntN(2) == 0 {
			n = rng.IntN(6)
		}
		b := make([]byte, n)
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
			if rng.IntN(3) > 0 {
				b[j] = "abcz234567"[rng.IntN(10)] // mostly valid, so long valid IDs occur
			}
		}
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		if got, want := validSandboxID(in), sandboxRE.MatchString(in); got != want {
			t.Errorf("validSandboxID(%q) = %v, regexp %v", in, got, want)
		}
		if got, want := isIDToken(in), tokenRE.MatchString(in); got != want {
			t.Errorf("isIDToken(%q) = %v, regexp %v", in, got, want)
		}
		wantTerm := tokenRE.MatchString(in) && !strings.Contains(in, "..")
		if validTerminalID(in) != wantTerm || validStableSessionID(in) != wantTerm {
			t.Errorf("%q: terminal %v, session %v, want %v", in, validTerminalID(in), validStableSessionID(in), wantTerm)
		}
	}
}
