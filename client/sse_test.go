package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
)

func decodeAll(t testing.TB, r io.Reader) ([]SSEEvent, error) {
	d := NewSSEDecoder(r)
	var out []SSEEvent
	for {
		ev, err := d.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSEDecoderFraming(t *testing.T) {
	in := ": comment\r\n" +
		"data: one\r\n\r\n" +
		"data:two\n" + "data:  three\n" + "foo: bar\n" + "\n" +
		"event: custom\rid: 7\rretry: 1500\rdata: four\r\r" +
		"\n\n" + // blank lines without data dispatch nothing
		"data\n\n" + // field without colon: empty data
		"data: unfinished"
	want := []SSEEvent{
		{Data: []byte("one")},
		{Data: []byte("two\n three")},
		{Event: "custom", ID: "7", Retry: 1500, Data: []byte("four")},
		{Data: []byte("")},
	}
	for _, r := range []io.Reader{strings.NewReader(in), iotest.OneByteReader(strings.NewReader(in)), iotest.HalfReader(strings.NewReader(in))} {
		got, err := decodeAll(t, r)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("got %d events %+v", len(got), got)
		}
		for i := range want {
			if got[i].Event != want[i].Event || got[i].ID != want[i].ID || got[i].Retry != want[i].Retry || !bytes.Equal(got[i].Data, want[i].Data) {
				t.Fatalf("event %d: got %+v want %+v", i, got[i], want[i])
			}
		}
	}
}

func TestSSEDecoderHugeLine(t *testing.T) {
	big := bytes.Repeat([]byte("A"), 17<<20)
	in := append(append([]byte("data: "), big...), "\r\n\r\ndata: next\n\n"...)
	got, err := decodeAll(t, bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !bytes.Equal(got[0].Data, big) || string(got[1].Data) != "next" {
		t.Fatalf("got %d events", len(got))
	}
	d := NewSSEDecoder(bytes.NewReader(in))
	d.MaxSize = 1 << 20
	if _, err := d.Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("limit not enforced: %v", err)
	}
}

func TestSSEDecoderBrokenStream(t *testing.T) {
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(io.ErrUnexpectedEOF))
	d := NewSSEDecoder(r)
	if ev, err := d.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("first: %v %q", err, ev.Data)
	}
	if _, err := d.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("second: %v", err)
	}
}

// referenceSSE is a deliberately simple decoder written straight from the SSE spec, used as the
// oracle for fuzzing: normalise line ends, split, and apply the field rules.
func referenceSSE(in []byte) []SSEEvent {
	s := strings.ReplaceAll(string(in), "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	lines := strings.Split(s, "\n")
	lines = lines[:len(lines)-1] // the last piece has no terminator
	var out []SSEEvent
	var cur SSEEvent
	var data []string
	has := false
	for _, l := range lines {
		if l == "" {
			if has {
				cur.Data = []byte(strings.Join(data, "\n"))
				out = append(out, cur)
			}
			cur, data, has = SSEEvent{}, nil, false
			continue
		}
		if l[0] == ':' {
			continue
		}
		field, value, found := strings.Cut(l, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch field {
		case "data":
			data = append(data, value)
			has = true
		case "event":
			cur.Event = value
		case "id":
			if !strings.Contains(value, "\x00") {
				cur.ID = value
			}
		case "retry":
			if isDigits([]byte(value)) && len(value) < 10 {
				n := 0
				for _, c := range value {
					n = n*10 + int(c-'0')
				}
				cur.Retry = n
			}
		}
	}
	return out
}

func FuzzSSEDecoder(f *testing.F) {
	f.Add([]byte("data: {\"type\":\"stdout\"}\n\n"))
	f.Add([]byte("data: a\r\ndata: b\r\n\r\n: c\n\nevent: x\rdata: y\r\r"))
	f.Add([]byte("retry: 10\nid: 1\ndata\n\ndata:\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		want := referenceSSE(in)
		for _, r := range []io.Reader{bytes.NewReader(in), iotest.OneByteReader(bytes.NewReader(in))} {
			got, err := decodeAll(t, r)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if len(got) != len(want) {
				t.Fatalf("got %d events, reference %d", len(got), len(want))
			}
			for i := range want {
				if got[i].Event != want[i].Event || got[i].ID != want[i].ID || !bytes.Equal(got[i].Data, want[i].Data) {
					t.Fatalf("event %d: got %+v want %+v", i, got[i], want[i])
				}
				if len(in) < 1000 && got[i].Retry != want[i].Retry {
					t.Fatalf("event %d retry: got %d want %d", i, got[i].Retry, want[i].Retry)
				}
			}
		}
		// Log message decoding of any payload never panics.
		for _, ev := range want {
			_, _ = DecodeLogMessage(ev.Data)
		}
	})
}

// The fast decoding path must agree with encoding/json wherever it answers.
func FuzzDecodeLogFast(f *testing.F) {
	f.Add([]byte(`{"type":"stdout","cursor":"djEuY0RFLjE","timestamp":"2026-08-14T10:00:00.010Z","data":"aGVsbG8K"}`))
	f.Add([]byte(`{"type":"truncated","timestamp":"2026-08-14T10:00:00.020Z"}`))
	f.Add([]byte(` { "Type" : "stderr", "data":"aA==" , "x":"y"} `))
	f.Add([]byte(`{"type":"stdout","data":"aGk\n="}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		fast, ok := decodeLogFast(in)
		if !ok {
			return
		}
		var slow rawLogEvent
		if err := json.Unmarshal(in, &slow); err != nil {
			t.Fatalf("fast path accepted what encoding/json rejects: %v", err)
		}
		if fast.Type != slow.Type || fast.Cursor != slow.Cursor || string(fast.ts) != slow.Timestamp || fast.Timestamp != "" ||
			fast.State != slow.State || !bytes.Equal(fast.Data, slow.Data) || (fast.Data == nil) != (slow.Data == nil) {
			t.Fatalf("fast %+v\nslow %+v", fast, slow)
		}
	})
}

// randomChunks reads its input in pieces of random size (1 byte to 300 KiB).
type randomChunks struct {
	data []byte
	rng  *rand.Rand
}

func (r *randomChunks) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(r.data), 1+r.rng.IntN(300<<10))
	if r.rng.IntN(4) == 0 {
		n = min(n, 1+r.rng.IntN(16))
	}
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// Events of every size, split across reads at random, with all three line ends and multi-line
// data: the in-place framing (borrowed data, buffer slides and growth) must agree with the
// reference, event by event, when each event is read before the next call.
func TestSSEDecoderInPlaceFramingMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var in bytes.Buffer
	ends := []string{"\n", "\r\n", "\r"}
	for in.Len() < 24<<20 {
		size := rng.IntN(64)
		switch rng.IntN(4) {
		case 0:
			size = rng.IntN(400 << 10)
		case 1:
			size = rng.IntN(2 << 20)
		}
		payload := make([]byte, size)
		for i := range payload {
			payload[i] = 'a' + byte(rng.IntN(26))
		}
		end := ends[rng.IntN(len(ends))]
		if rng.IntN(8) == 0 {
			in.WriteString(": keepalive" + end)
		}
		lines := 1 + rng.IntN(3)
		if size > 1000 {
			lines = 1
		}
		for l := 0; l < lines; l++ {
			in.WriteString("data: ")
			in.Write(payload)
			in.WriteString(end)
		}
		if rng.IntN(6) == 0 {
			in.WriteString("id: 42" + end)
		}
		in.WriteString(end)
	}
	want := referenceSSE(in.Bytes())
	// Reads that end right after a data line, so that the blank line ending the event (and the next
	// event) arrive with the next read, while the event's data waits in the buffer.
	var cuts []int
	for i := 0; ; {
		j := bytes.Index(in.Bytes()[i:], []byte("data: "))
		if j < 0 {
			break
		}
		k := bytes.IndexAny(in.Bytes()[i+j:], "\r\n")
		cuts = append(cuts, i+j+k+1)
		i += j + k + 1
	}
	readers := map[string]io.Reader{
		"random pieces":    &randomChunks{data: in.Bytes(), rng: rng},
		"after data lines": &cutReader{data: in.Bytes(), cuts: cuts},
	}
	for name, r := range readers {
		d := NewSSEDecoder(r)
		for i := 0; ; i++ {
			ev, err := d.next()
			if err == io.EOF {
				if i != len(want) {
					t.Fatalf("%s: got %d events, reference %d", name, i, len(want))
				}
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if i >= len(want) || !bytes.Equal(ev.Data, want[i].Data) || ev.ID != want[i].ID {
				t.Fatalf("%s: event %d differs from the reference (len %d)", name, i, len(ev.Data))
			}
		}
	}
}

// cutReader ends each read at the next cut (or where p is full).
type cutReader struct {
	data []byte
	off  int
	cuts []int
}

func (r *cutReader) Read(p []byte) (int, error) {
	if r.off >= len(r.data) {
		return 0, io.EOF
	}
	for len(r.cuts) > 0 && r.cuts[0] <= r.off {
		r.cuts = r.cuts[1:]
	}
	end := len(r.data)
	if len(r.cuts) > 0 {
		end = r.cuts[0]
	}
	n := copy(p, r.data[r.off:end])
	r.off += n
	return n, nil
}

// An event's data line that ends near the end of the read buffer, with its blank line in the next
// read: the buffer is reused from its start, so the data must be moved out first.
func TestSSEDecoderDataSurvivesBufferReuse(t *testing.T) {
	first := bytes.Repeat([]byte("x"), sseBufSize-40<<10)
	second := bytes.Repeat([]byte("y"), sseBufSize-40<<10)
	in := []byte("data: " + string(first) + "\n" + "\ndata: " + string(second) + "\n\n")
	d := NewSSEDecoder(&cutReader{data: in, cuts: []int{len(first) + 7}})
	for i, want := range [][]byte{first, second} {
		ev, err := d.next()
		if err != nil || !bytes.Equal(ev.Data, want) {
			t.Fatalf("event %d: %v, %d bytes, starts %q", i, err, len(ev.Data), ev.Data[:min(len(ev.Data), 8)])
		}
	}
}
