package client

import "time"

// parseTimestamp is time.Parse(time.RFC3339Nano, string(b)), the zero time when that fails, without
// making a string of b. The bridge's form, "2006-01-02T15:04:05.000Z", is read here with the checks
// time.Parse makes of it (the same ranges, the same result); any other form (a zone offset, more
// than nine digits of fraction, anything malformed) is left to time.Parse.
func parseTimestamp(b []byte) time.Time {
	if t, ok := parseUTCTimestamp(b); ok {
		return t
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return time.Time{}
	}
	return t
}

// parseUTCTimestamp reads "YYYY-MM-DDTHH:MM:SS[.F]Z" with one to nine digits of fraction. ok is
// false for anything else, including dates and times out of range.
func parseUTCTimestamp(b []byte) (t time.Time, ok bool) {
	const base = len("2006-01-02T15:04:05")
	if len(b) < base+1 || b[len(b)-1] != 'Z' ||
		b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return t, false
	}
	ok = true
	num := func(s []byte, lo, hi int) int {
		x := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				ok = false
				return lo
			}
			x = x*10 + int(c-'0')
		}
		if x < lo || x > hi {
			ok = false
			return lo
		}
		return x
	}
	year := num(b[0:4], 0, 9999)
	month := num(b[5:7], 1, 12)
	day := num(b[8:10], 1, 31)
	hour := num(b[11:13], 0, 23)
	minute := num(b[14:16], 0, 59)
	sec := num(b[17:19], 0, 59)
	nsec := 0
	if frac := b[base : len(b)-1]; len(frac) > 0 {
		digits := len(frac) - 1
		if frac[0] != '.' || digits < 1 || digits > 9 {
			return time.Time{}, false
		}
		nsec = num(frac[1:], 0, 999_999_999)
		for i := digits; i < 9; i++ {
			nsec *= 10
		}
	}
	if !ok {
		return time.Time{}, false
	}
	t = time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if t.Day() != day {
		return time.Time{}, false // a day the month has not (time.Date moved it on)
	}
	return t, true
}
