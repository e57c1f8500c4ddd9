// Command soakgen is the output generator the soak test runs inside the sandbox: it writes seeded
// chunks (see internal/seeded) to stdout, or alternately to stdout and stderr, pausing between
// chunks, and exits 0. It imports nothing that touches the terminal, so a PTY sees only its chunks.
//
//	soakgen SEED CHUNKS SIZE PAUSE_MS MIXED(0|1)
package main
