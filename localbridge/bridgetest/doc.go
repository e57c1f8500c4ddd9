// Package bridgetest starts a real local bridge on loopback for tests: a temporary root, a random
// token, and cleanup (every process group and PTY ended) registered with t.Cleanup.
//
// It is for tests only: it must never be imported by production code, and it never listens on
// anything but 127.0.0.1.
package bridgetest
