package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// decodeBase64 must agree with encoding/base64 on every input without CR or LF.
func TestDecodeBase64MatchesStd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(src []byte) {
		t.Helper()
		want := make([]byte, base64.StdEncoding.DecodedLen(len(src)))
		wn, werr := base64.StdEncoding.Decode(want, src)
		got := make([]byte, base64.StdEncoding.DecodedLen(len(src)))
		gn, ok := decodeBase64(got, src)
		hasNL := bytes.ContainsAny(src, "\r\n")
		switch {
		case hasNL:
			if ok {
				t.Fatalf("%q: accepted CR/LF", src)
			}
		case (werr == nil) != ok:
			t.Fatalf("%q: std err %v, fast ok %v", src, werr, ok)
		case ok && !bytes.Equal(want[:wn], got[:gn]):
			t.Fatalf("%q: std %x, fast %x", src, want[:wn], got[:gn])
		}
	}
	for n := 0; n < 200; n++ {
		raw := make([]byte, n)
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		enc := []byte(base64.StdEncoding.EncodeToString(raw))
		check(enc)
		// Corrupt one byte anywhere, with characters from and outside the alphabet.
		for _, c := range []byte("=\\\r\n\"A/ \x00\xff-_") {
			if len(enc) == 0 {
				break
			}
			bad := bytes.Clone(enc)
			bad[rng.IntN(len(bad))] = c
			check(bad)
		}
		// Truncated and padded oddly.
		if len(enc) > 1 {
			check(enc[:len(enc)-1])
			check(append(bytes.Clone(enc), '='))
			check(append(bytes.Clone(enc), "QUJD"...))
		}
	}
}

func BenchmarkDecodeBase64(b *testing.B) {
	raw := bytes.Repeat([]byte("sandscope benchmark line 0123456789abcdefghijklmnopqrstuvwxyz\n"), 4300)
	enc := []byte(base64.StdEncoding.EncodeToString(raw))
	dst := make([]byte, base64.StdEncoding.DecodedLen(len(enc)))
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		for i := 0; i < b.N; i++ {
			if _, ok := decodeBase64(dst, enc); !ok {
				b.Fatal("rejected")
			}
		}
	})
	b.Run("std", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		for i := 0; i < b.N; i++ {
			if _, err := base64.StdEncoding.Decode(dst, enc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The fast path's data value decoding (block decoding up to the closing quote) must agree with
// encoding/json on long values, corrupted ones and escapes included.
func TestDecodeLogFastDataMatchesJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 0; n < 300; n++ {
		raw := make([]byte, rng.IntN(400))
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		val := []byte(base64.StdEncoding.EncodeToString(raw))
		if n%3 != 0 && len(val) > 0 {
			inserts := []string{`\"`, `\\`, `\/`, `"`, "=", "\n", `\n`, "A", "é"}
			at := rng.IntN(len(val))
			val = append(val[:at:at], append([]byte(inserts[rng.IntN(len(inserts))]), val[at:]...)...)
		}
		in := []byte(`{"type":"stdout","cursor":"c","data":"` + string(val) + `"}`)
		fast, ok := decodeLogFast(in)
		var slow rawLogEvent
		jerr := json.Unmarshal(in, &slow)
		if !ok {
			if n%3 == 0 {
				t.Fatalf("%q: fast path refused a clean event", in)
			}
			continue // encoding/json decides
		}
		if jerr != nil {
			t.Fatalf("%q: fast path accepted what encoding/json rejects: %v", in, jerr)
		}
		if !bytes.Equal(fast.Data, slow.Data) || fast.Type != slow.Type || fast.Cursor != slow.Cursor {
			t.Fatalf("%q: fast %x slow %x", in, fast.Data, slow.Data)
		}
		if n%3 == 0 && !bytes.Equal(fast.Data, raw) {
			t.Fatalf("clean value decoded wrong")
		}
	}
}
