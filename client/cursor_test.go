package client

import (
	"encoding/base64"
	"testing"
)

func TestCursorKnownFormat(t *testing.T) {
	// The example from the bridge reference: process 6f1c2a9e-…, seq 1.
	raw := "djEuTm1ZeFl6SmhPV1V0TTJRMFlpMDBaVGhtTFRsaE1XSXRNbU16WkRSbE5XWTJZVGRpLjE"
	c := ParseCursor(raw)
	if !c.Known || c.Seq != 1 || c.Store != "6f1c2a9e-3d4b-4e8f-9a1b-2c3d4e5f6a7b" {
		t.Fatalf("%+v", c)
	}
	if FormatCursor(c.Store, 1) != raw {
		t.Fatal("format does not reproduce the bridge's cursor")
	}
	c42 := ParseCursor("djEuTm1ZeFl6SmhPV1V0TTJRMFlpMDBaVGhtTFRsaE1XSXRNbU16WkRSbE5XWTJZVGRpLjQy")
	if after, ok := c42.After(c); !ok || !after || c42.Seq != 42 {
		t.Fatalf("%+v", c42)
	}
	if _, ok := c.After(ParseCursor(FormatCursor("other", 5))); ok {
		t.Fatal("cursors of different stores compared")
	}
}

func TestCursorOpaque(t *testing.T) {
	enc := base64.RawURLEncoding.EncodeToString
	for _, raw := range []string{
		"", "abc", "c12", "!!!",
		enc([]byte("v2.YWJj.1")),                // wrong version
		enc([]byte("v1.YWJj.0")),                // seq 0
		enc([]byte("v1.YWJj.01")),               // non-canonical seq
		enc([]byte("v1.YWJj.9007199254740992")), // beyond 2^53-1
		enc([]byte("v1.YWJj.1.2")),              // four parts
		enc([]byte("v1..1")),                    // empty store
		enc([]byte("v1.YWJj.1")) + "=",          // padded
		enc([]byte("v1.YWJj=.1")),               // padded store
		enc([]byte("v1.YWJj.12"))[:4] + "\n" + enc([]byte("v1.YWJj.12"))[4:], // a line break the decoder skips
		enc([]byte("v1.YW\nJj.1")), // a line break in the store
		enc([]byte("v1.YWJj.+1")),  // signed seq
	} {
		if c := ParseCursor(raw); c.Known || c.Raw != raw {
			t.Errorf("%q parsed as known: %+v", raw, c)
		}
	}
}

func FuzzCursor(f *testing.F) {
	f.Add("djEuTm1ZeFl6SmhPV1V0TTJRMFlpMDBaVGhtTFRsaE1XSXRNbU16WkRSbE5XWTJZVGRpLjE", "p", int64(1))
	f.Add("djEuWVdKai4x", "6f1c2a9e", int64(9007199254740991))
	f.Add("opaque", "", int64(0))
	f.Add("djEuWVdKai4x\n", "", int64(0))
	f.Add("djEuWVd\rKai4x", "", int64(0))
	f.Fuzz(func(t *testing.T, raw, store string, seq int64) {
		c := ParseCursor(raw)
		if c.Raw != raw {
			t.Fatal("raw not kept")
		}
		if raw != "" && len(raw) <= maxCursorLen {
			// the stack-buffer path accepts exactly what the allocating one does
			if ref := parseCursorLong(raw); c != ref {
				t.Fatalf("%q: %+v, want %+v", raw, c, ref)
			}
		}
		// a cursor read after another gives the same, whichever came before
		if after := parseCursorAfter(raw, ParseCursor(FormatCursor(store, 1))); after != c {
			t.Fatalf("%q after a cursor of %q: %+v, want %+v", raw, store, after, c)
		}
		if c.Known {
			if c.Seq < 1 || c.Seq > maxSafeInteger || c.Store == "" {
				t.Fatalf("bad known cursor %+v", c)
			}
			if FormatCursor(c.Store, c.Seq) != raw {
				t.Fatalf("known cursor %q does not round-trip", raw)
			}
		}
		if formatted := FormatCursor(store, seq); store != "" && seq >= 1 && seq <= maxSafeInteger && len(formatted) <= maxCursorLen {
			d := ParseCursor(formatted)
			if !d.Known || d.Store != store || d.Seq != seq {
				t.Fatalf("format/parse mismatch for %q %d: %+v", store, seq, d)
			}
		}
	})
}

func BenchmarkParseCursor(b *testing.B) {
	raw := FormatCursor("3ec2046e-b1a4-4851-84fd-f95e693fb8fe", 123456)
	b.ReportAllocs()
	for b.Loop() {
		if !ParseCursor(raw).Known {
			b.Fatal("not parsed")
		}
	}
}
