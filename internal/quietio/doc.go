// Package quietio gives network connections reads and writes that do not wake the Go runtime's
// monitor thread.
//
// A Go program idle between events parks its monitor thread (sysmon) in a deep sleep; the first
// system call made through the scheduler after that wakes it, and it then polls every 20 µs while
// anything runs, retaking processors from system calls that last longer. A program woken by a
// few hundred small network events a second (the TUI following eight processes' output in the
// background, figure 11b) spent more than half of its thread wake-ups there. A read or write of a
// non-blocking socket never blocks, so it can be made as a plain system call, without telling the
// scheduler: the scheduler has nothing to take back from it, and the network poller still does
// the waiting when there is nothing to read or no room to write.
package quietio
