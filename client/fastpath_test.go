package client

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// sameDecode fails unless the fast path (decodeLogMessage, decoding into dirty recycled memory)
// and encoding/json (decodeLogSlow) give the same message and the same error for in. It reports
// whether the fast path accepted in.
func sameDecode(t *testing.T, in []byte) (fastAccepted bool) {
	t.Helper()
	dirty := func(n int) []byte { return bytes.Repeat([]byte{0xA5}, n+7) }
	_, fastAccepted = decodeLogFastInto(in, dirty)
	fm, ferr := decodeLogMessage(in, dirty)
	sm, serr := decodeLogSlow(in)
	if (ferr == nil) != (serr == nil) || ferr != nil && ferr.Error() != serr.Error() {
		t.Fatalf("%.200q: errors differ: fast %v, slow %v", in, ferr, serr)
	}
	if ferr != nil {
		var me *MalformedEventError
		if !errors.As(ferr, &me) || !bytes.Equal(me.Data, in) {
			t.Fatalf("%.200q: fast error %T does not carry the event", in, ferr)
		}
	}
	if fm.Type != sm.Type || fm.Cursor != sm.Cursor || fm.State != sm.State || !sameTime(fm.Time, sm.Time) ||
		!bytes.Equal(fm.Data, sm.Data) || (fm.Data == nil) != (sm.Data == nil) ||
		fmt.Sprint(fm.Exit) != fmt.Sprint(sm.Exit) || fmt.Sprint(fm.Error) != fmt.Sprint(sm.Error) {
		t.Fatalf("%.200q:\nfast %+v\nslow %+v", in, fm, sm)
	}
	return fastAccepted
}

// Whatever the input, decoding an event gives what encoding/json gives: the same message (type,
// cursor, time, data, ending) and the same error.
func FuzzLogMessageFastMatchesSlow(f *testing.F) {
	for _, s := range fastSlowCases {
		f.Add([]byte(s.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) { sameDecode(t, in) })
}

var fastSlowCases = []struct {
	name, in string
	fast     bool // the fast path takes it (the bridge's own shapes)
}{
	{"bridge", `{"type":"stdout","cursor":"djEuWVdKai4x","timestamp":"2026-08-14T10:00:00.010Z","data":"aGVsbG8K"}`, true},
	{"stderr", `{"type":"stderr","cursor":"c","timestamp":"2026-08-14T10:00:00Z","data":""}`, true},
	{"field order", `{"data":"aGk=","timestamp":"2026-02-28T23:59:59.999999999Z","cursor":"c","type":"stdout"}`, true},
	{"whitespace", " {\n\t\"type\" : \"stdout\" ,\"cursor\":\"c\", \"data\" : \"aGk=\" }\n", true},
	{"unknown fields", `{"type":"stdout","cursor":"c","extra":"x","data":"aGk=","more":"y"}`, true},
	{"unknown type", `{"type":"progress","cursor":"c"}`, true},
	{"truncated type", `{"type":"truncated","timestamp":"2026-08-14T10:00:00.020Z"}`, true},
	{"no cursor", `{"type":"stdout","data":"aGk="}`, true},
	{"no type", `{"cursor":"c","data":"aGk="}`, true},
	{"utf8 in strings", `{"type":"stdout","cursor":"é€😀","data":"aGk="}`, true},
	{"leap day", `{"type":"stdout","cursor":"c","timestamp":"2024-02-29T00:00:00.5Z","data":"aGk="}`, true},
	{"no leap day", `{"type":"stdout","cursor":"c","timestamp":"2100-02-29T00:00:00Z","data":"aGk="}`, true},
	{"bad timestamp", `{"type":"stdout","cursor":"c","timestamp":"yesterday","data":"aGk="}`, true},
	{"offset timestamp", `{"type":"stdout","cursor":"c","timestamp":"2026-08-14T12:00:00.1+02:00","data":"aGk="}`, true},
	{"long fraction", `{"type":"stdout","cursor":"c","timestamp":"2026-08-14T12:00:00.1234567891Z","data":"aGk="}`, true},
	{"escaped cursor", `{"type":"stdout","cursor":"a\"b\\c\u00e9","data":"aGk="}`, false},
	{"escaped type", `{"type":"std\u006fut","cursor":"c","data":"aGk="}`, false},
	{"escaped data", `{"type":"stdout","cursor":"c","data":"aG\/k="}`, false},
	{"escaped key", `{"typ\u0065":"stdout","cursor":"c","data":"aGk="}`, false},
	{"case of keys", `{"Type":"stdout","CURSOR":"c","data":"aGk="}`, false},
	{"duplicate key", `{"type":"stdout","cursor":"a","cursor":"b","data":"aGk="}`, true},
	{"terminal", `{"type":"terminal","cursor":"c","state":"exited","exit":{"code":3}}`, false},
	{"number", `{"type":"stdout","cursor":"c","n":1,"data":"aGk="}`, false},
	{"null data", `{"type":"stdout","cursor":"c","data":null}`, false},
	{"bad base64", `{"type":"stdout","cursor":"c","data":"a*k="}`, false},
	{"short base64", `{"type":"stdout","cursor":"c","data":"aGk"}`, false},
	{"base64 trailing bits", `{"type":"stdout","cursor":"c","data":"aGl="}`, true}, // encoding/json takes them too
	{"raw newline in data", "{\"type\":\"stdout\",\"cursor\":\"c\",\"data\":\"aG\nk=\"}", false},
	{"CR between tokens", "{\"type\":\"stdout\",\r\"cursor\":\"c\",\"data\":\"aGk=\"}", false},
	{"control in string", "{\"type\":\"stdout\",\"cursor\":\"a\x01\",\"data\":\"aGk=\"}", false},
	{"bad utf8", "{\"type\":\"stdout\",\"cursor\":\"a\xff\",\"data\":\"aGk=\"}", false},
	{"cut in data", `{"type":"stdout","cursor":"c","data":"aGk=`, false},
	{"cut after data", `{"type":"stdout","cursor":"c","data":"aGk="`, false},
	{"cut in key", `{"type":"stdout","cur`, false},
	{"trailing garbage", `{"type":"stdout","cursor":"c","data":"aGk="}x`, false},
	{"two objects", `{"type":"stdout","cursor":"c","data":"aGk="}{}`, false},
	{"empty object", `{}`, true},
	{"empty", ``, false},
	{"array", `[]`, false},
}

// The shapes the fast path must take, and the ones it must leave to encoding/json, decode as
// encoding/json decodes them.
func TestLogMessageFastMatchesSlow(t *testing.T) {
	for _, c := range fastSlowCases {
		t.Run(c.name, func(t *testing.T) {
			if got := sameDecode(t, []byte(c.in)); got != c.fast {
				t.Fatalf("fast path took it: %v, want %v", got, c.fast)
			}
		})
	}
}

// Events far larger than the bridge's chunks, cut anywhere, decode as encoding/json decodes them.
func TestLogMessageFastHugeAndCut(t *testing.T) {
	raw := bytes.Repeat([]byte("huge event line\n\x00\xff"), 400_000) // about 7.6 MB
	in := []byte(`{"type":"stdout","cursor":"c","timestamp":"2026-08-14T10:00:00.010Z","data":"` +
		base64.StdEncoding.EncodeToString(raw) + `"}`)
	if !sameDecode(t, in) {
		t.Fatal("fast path refused a huge clean event")
	}
	m, err := decodeLogMessage(in, nil)
	if err != nil || !bytes.Equal(m.Data, raw) {
		t.Fatalf("huge event decoded wrong (%v)", err)
	}
	for _, cut := range []int{1, 2, 3, 4, 5, 100, len(in) / 2, len(in) - 3, len(in) - 2, len(in) - 1} {
		if sameDecode(t, in[:len(in)-cut]) {
			t.Fatalf("fast path took an event cut %d bytes short", cut)
		}
	}
}

// parseTimestamp agrees with time.Parse on whatever it is given.
func FuzzParseTimestamp(f *testing.F) {
	for _, s := range timestampCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			want = time.Time{}
		}
		if got := parseTimestamp([]byte(s)); !sameTime(got, want) {
			t.Fatalf("%q: %v, want %v", s, got, want)
		}
	})
}

// sameTime says a and b are the same instant in the same zone (time.Parse makes a new fixed zone
// for each offset it reads, so == would tell two equal results apart).
func sameTime(a, b time.Time) bool {
	return a.Equal(b) && a.String() == b.String() && a.IsZero() == b.IsZero()
}

var timestampCases = []string{
	"2026-08-14T10:00:00.010Z", "2026-08-14T10:00:00Z", "2026-08-14T10:00:00.123456789Z",
	"2024-02-29T23:59:59.9Z", "2023-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "1900-02-29T00:00:00Z",
	"2026-04-31T00:00:00Z", "2026-12-31T24:00:00Z", "2026-12-31T23:60:00Z", "2026-12-31T23:59:60Z",
	"2026-00-10T00:00:00Z", "2026-13-10T00:00:00Z", "2026-01-00T00:00:00Z", "0000-01-01T00:00:00Z",
	"9999-12-31T23:59:59.999999999Z", "2026-08-14T10:00:00.Z", "2026-08-14T10:00:00.1234567891Z",
	"2026-08-14T10:00:00.12a4Z", "2026-08-14T10:00:00+02:00", "2026-08-14T10:00:00.5-07:30",
	"2026-08-14t10:00:00Z", "2026-08-14T10:00:00z", "2026-08-14 10:00:00Z", "+026-08-14T10:00:00Z",
	"2026-8-14T10:00:00Z", "2026-08-14T10:00:00", "Z", "", "2026-08-14T10:00:0-Z",
}

func TestParseTimestampMatchesTime(t *testing.T) {
	for _, s := range timestampCases {
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			want = time.Time{}
		}
		if got := parseTimestamp([]byte(s)); !sameTime(got, want) {
			t.Errorf("%q: %v, want %v", s, got, want)
		}
	}
	// every day of a leap and a common year, at a few times of day
	for _, year := range []int{1900, 2000, 2023, 2024} {
		for d := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() == year; d = d.Add(24*time.Hour + 7*time.Minute + 13*time.Second) {
			s := d.Format("2006-01-02T15:04:05") + fmt.Sprintf(".%03dZ", d.YearDay()%1000)
			want, _ := time.Parse(time.RFC3339Nano, s)
			if got, ok := parseUTCTimestamp([]byte(s)); !ok || got != want {
				t.Fatalf("%q: %v (%v), want %v", s, got, ok, want)
			}
		}
	}
}

// An output event of the bridge's shape costs one allocation, its cursor: the type and timestamp
// are read where they lie, and a cursor of the same store shares the previous one's Store.
func TestOutputEventAllocations(t *testing.T) {
	store := "6f1c2a9e-3d4b-4e8f-9a1b-2c3d4e5f6a7b"
	prev := ParseCursor(FormatCursor(store, 41))
	in := []byte(`{"type":"stdout","cursor":"` + FormatCursor(store, 42) + `","timestamp":"2026-08-14T10:00:00.010Z","data":"aGVsbG8K"}`)
	buf := make([]byte, 64)
	alloc := func(n int) []byte { return buf[:n] }
	var m LogMessage
	var cur Cursor
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		m, err = decodeLogMessage(in, alloc)
		if err != nil {
			t.Fatal(err)
		}
		cur = parseCursorAfter(m.Cursor, prev)
	})
	if allocs > 1 {
		t.Errorf("%v allocations per output event, want 1 (the cursor)", allocs)
	}
	if m.Type != "stdout" || string(m.Data) != "hello\n" || m.Time != time.Date(2026, 8, 14, 10, 0, 0, 10e6, time.UTC) {
		t.Fatalf("decoded %+v", m)
	}
	if !cur.Known || cur.Seq != 42 || cur.Store != store || cur != ParseCursor(m.Cursor) {
		t.Fatalf("cursor %+v", cur)
	}
	if other := parseCursorAfter(FormatCursor("other", 7), prev); other != ParseCursor(FormatCursor("other", 7)) {
		t.Fatalf("a cursor of another store: %+v", other)
	}
}

// A cursor whose last character carries bits beyond the encoded bytes is not canonical: it stays
// opaque, as encoding it again would show.
func TestCursorTrailingBits(t *testing.T) {
	canon := base64.RawURLEncoding.EncodeToString([]byte("v1.YWJj.12")) // 14 characters: 2 spare bits
	if !ParseCursor(canon).Known {
		t.Fatalf("%q not known", canon)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, canon[len(canon)-1])
	for spare := 1; spare < 4; spare++ {
		raw := canon[:len(canon)-1] + string(alphabet[last|spare])
		if c := ParseCursor(raw); c.Known {
			t.Errorf("%q (spare bits %d) parsed as known: %+v", raw, spare, c)
		}
	}
}

// plainWord agrees with a byte-by-byte check on every position of each kind of byte, alone and
// among others.
func TestPlainWord(t *testing.T) {
	plain := func(c byte) bool { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' }
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 8; pos++ {
			for _, fill := range []byte{'a', ' ', '~', 0x7f, '!', '#', '[', ']'} {
				var w [8]byte
				for k := range w {
					w[k] = fill
				}
				w[pos] = byte(c)
				want := true
				for _, x := range w {
					want = want && plain(x)
				}
				if got := plainWord(binary.LittleEndian.Uint64(w[:])); got != want {
					t.Fatalf("%q: %v, want %v", w, got, want)
				}
			}
		}
	}
}
