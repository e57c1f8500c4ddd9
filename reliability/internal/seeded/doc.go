// Package seeded makes the deterministic process output the reliability tests compare streams
// against: chunks of seeded random bytes, each starting with hostile bytes (invalid UTF-8, NUL, an
// OSC 52 sequence, a C1 CSI, CRLF). The same seed always gives the same bytes, in the test and in
// the generator process alike. It must never read the environment or the clock.
package seeded
