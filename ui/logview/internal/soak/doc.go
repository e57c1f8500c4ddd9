// Command soak checks the whole log path against the memory budget (following 1 GiB stays under
// 150 MiB RSS, history kept on disk): in one process it starts a local bridge, runs a paced shell
// producer of realistic lines (default 1 GiB), follows it with client.Follow into the real log view
// model, which drains the follower in batches into a logbuf.Buffer spilling to a temporary cache
// directory, and renders View() every 33 ms like Bubble Tea would. It reports bytes followed, wall
// time, peak RSS (VmHWM), final RSS, the buffer's disk use and the gaps the follower saw; then it
// scrolls to the top and checks the first row is the process's first line, and saves raw output
// through the view's save dialog and compares its SHA-256 with what the follower delivered (and with
// the producer's output when there was no gap).
//
//	go run ./ui/logview/internal/soak [-size BYTES] [-budget MiB] [-dir DIR] [-pause SECONDS]
//	go run ./ui/logview/internal/soak -flood [-queue EVENTS]
//
// The producer is paced (a sleep after each 64 KiB block) so the 1 MiB the bridge keeps per process
// is enough and every byte is followed. -flood lets it write as fast as it can instead: the bridge
// then overtakes the follower, the gaps are reported, and the checks compare the save with what was
// followed; -queue changes how many events the follower may hold, to try other capacities.
// It exits 1 when a check fails or peak RSS reaches the budget. It must never leave its bridge,
// producer or files behind, and never print the bridge token.
package main
