// Package runs is the all-runs screen: every process and terminal of every sandbox sandscope
// watches, in one table read from the record (not from whichever screen is open), with each
// run's state badge, sandbox, incarnation, command, age, last output and stream health. It
// filters, sorts, narrows to the runs that need attention in one key, and opens a run's log or
// terminal.
package runs
