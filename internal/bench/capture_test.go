package main

import (
	"strings"
	"testing"
)

// The curl side of 11b counts decoded output, whatever the pieces its pipe delivers.
func TestOutputCounterCountsDecodedData(t *testing.T) {
	stream := "data: {\"type\":\"stdout\",\"cursor\":\"a\",\"data\":\"aGkK\"}\n\n" + // "hi\n"
		": keep-alive\n\n" +
		"data: {\"type\":\"stderr\",\"data\":\"" + strings.Repeat("QUJD", 1000) + "\"}\n\n" + // 3000 bytes
		"data: {\"type\":\"terminal\",\"state\":\"exited\",\"exit\":{\"code\":0}}\n\n"
	for _, step := range []int{1, 7, 64, len(stream)} {
		var c outputCounter
		for s := stream; len(s) > 0; {
			n := min(step, len(s))
			if _, err := c.Write([]byte(s[:n])); err != nil {
				t.Fatal(err)
			}
			s = s[n:]
		}
		if got := c.load(); got != 3003 {
			t.Errorf("pieces of %d: counted %d bytes of output, want 3003", step, got)
		}
	}
}
