package localbridge

// Skeleton fixed so the process side and the terminal side can be built side by side. The owner of
// the terminal side fills this file in (and may split it into terminal_*.go); these names stay.

import "net/http"

// terminalTable holds one incarnation's terminals.
type terminalTable struct{}

// newTerminalTable makes the terminal table of a new incarnation.
func newTerminalTable(inc *incarnation) *terminalTable { return &terminalTable{} }

// counts reports how many terminals are running and how many are known.
func (t *terminalTable) counts() (running, total int) { return 0, 0 }

// shutdown ends every terminal of the incarnation: PTYs killed, WebSockets closed with 1012
// "Runtime replaced" when replaced is true, else dropped as a container stop would.
func (t *terminalTable) shutdown(replaced bool) {}

// serveTerminals handles /v1/sandbox/{id}/terminals and everything below it, after the sandbox ID
// was validated and the request authenticated. rest is the path after ".../terminals" ("" or "/…").
func (s *Server) serveTerminals(w http.ResponseWriter, r *http.Request, sandbox, rest string) {
	writeNotFoundText(w)
}
