// Package notify is the TUI's notification list: every ending, loss, suspect end and stream gap
// the record derived from what sandscope watched (record.Alert), whichever screen was open, with
// the one-line status text for each and the terminal signals (bell, OSC 9, OSC 777 desktop
// notifications) the configuration asks for. Alert text comes from the bridge and from processes:
// it is sanitised before it is shown or written into a terminal sequence, and a signal's bytes can
// never carry an escape sequence, a control character or a field separator of their own.
package notify
