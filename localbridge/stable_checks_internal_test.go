package localbridge

import (
	"math"
	"testing"
)

// TestJSToNumber: Number(string) for the port parameter, as JavaScript converts it.
func TestJSToNumber(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		in   string
		want float64
	}{
		{"8080", 8080}, {" 8080\t", 8080}, {"\u00a08080\u2028", 8080}, {"", 0}, {"  ", 0},
		{"0x1f90", 8080}, {"0X1F90", 8080}, {"0o17620", 8080}, {"0b1111110010000", 8080},
		{"8.08e3", 8080}, {"8080.", 8080}, {".5", 0.5}, {"+8080", 8080}, {"-8080", -8080},
		{"1e400", math.Inf(1)}, {"Infinity", math.Inf(1)}, {"-Infinity", math.Inf(-1)},
		{"8_080", nan}, {"0x", nan}, {"-0x10", nan}, {"inf", nan}, {"infinity", nan}, {"NaN", nan},
		{"0x1p3", nan}, {"8080abc", nan}, {"+", nan}, {".", nan}, {"1e", nan}, {"١٢", nan},
	} {
		got, ok := jsToNumber(tc.in)
		if math.IsNaN(tc.want) {
			if ok {
				t.Errorf("Number(%q) = %v, want NaN", tc.in, got)
			}
			continue
		}
		if !ok || got != tc.want {
			t.Errorf("Number(%q) = %v %v, want %v", tc.in, got, ok, tc.want)
		}
	}
	for port, want := range map[string]bool{"1024": true, "65535": true, "1023": false, "65536": false, "3000": false,
		"3000.0": false, "8080.5": false, "Infinity": false, "": false, "0x400": true, "1e4": true} {
		if got := validTunnelPort(port); got != want {
			t.Errorf("validTunnelPort(%q) = %v, want %v", port, got, want)
		}
	}
}

// TestFileURLPathname: whether an unmount path resolves to the root, as new URL(p, "file:///")
// decides.
func TestFileURLPathname(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"/", "/", true}, {"/m", "/m", true}, {"/m/", "/m/", true}, {"/a/..", "/", true}, {"/a/../", "/", true},
		{"/a/%2e%2E", "/", true}, {"/a/.%2e/b", "/b", true}, {"/./", "/", true}, {"/.", "/", true},
		{`/..\..`, "/", true}, {"//", "/", true}, {"//host", "/", true}, {"//host/m", "/m", true},
		{"/?x", "/", true}, {"/#x", "/", true}, {"/m?x", "/m", true}, {"/m\t/..", "/", true},
		{"/m/../n/", "/n/", true}, {"/../..", "/", true}, {"//a b/m", "", false},
	} {
		got, ok := fileURLPathname(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("fileURLPathname(%q) = %q %v, want %q %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
