package localbridge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"sandscope/localbridge/seqlog"
)

// Terminal WebSocket tuning. The send queue bound plays the role of the real server's socket
// backpressure limit: a client that lets more than this pile up is closed with 1013 and must
// reconnect from its cursor. Variables so tests can shrink them.
var (
	termSendQueueLimit = 4 << 20          // bytes queued (and in flight) per connection
	termWriteTimeout   = 10 * time.Second // deadline of every frame write
	termCloseWait      = time.Second      // how long to wait for the client's close reply
)

const (
	termReadLimit = 1 << 20 // largest client frame accepted
	termBatch     = 64      // log events taken per wake-up
)

// termBackpressureCount counts connections closed for backpressure (observable by tests).
var termBackpressureCount atomic.Int64

// closeReq is a close frame to send.
type closeReq struct {
	code   int
	reason string
}

var (
	closeExited    = closeReq{websocket.CloseNormalClosure, "Terminal exited"}
	closeComplete  = closeReq{websocket.CloseNormalClosure, "Terminal output complete"}
	closeReplaced  = closeReq{websocket.CloseServiceRestart, "Runtime replaced"}
	closeBackpress = closeReq{websocket.CloseTryAgainLater, "Terminal client backpressure"}
	closeTermError = closeReq{websocket.CloseInternalServerErr, "Terminal error"}
)

var termUpgrader = websocket.Upgrader{
	ReadBufferSize:  4096,
	WriteBufferSize: 32 << 10,
	// The route requires the Authorization header, which browsers cannot put on a WebSocket
	// handshake, so a cross-site page cannot open one; the Origin check adds nothing.
	CheckOrigin: func(*http.Request) bool { return true },
}

// outFrame is one queued message: a text frame, optionally followed immediately by one binary
// frame (a chunk and its bytes are queued together so nothing can come between them).
type outFrame struct {
	text []byte
	bin  []byte
}

func (f outFrame) size() int { return len(f.text) + len(f.bin) }

// termConn is one WebSocket client of a terminal. Output enters its bounded send queue first from
// the log replay (catchUp), then straight from the PTY reader; the writer goroutine drains the
// queue with a deadline on every write, and the reader goroutine handles input and controls.
type termConn struct {
	term   *terminal
	ws     *websocket.Conn
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	queue    []outFrame
	pending  int       // bytes queued or being written
	closing  *closeReq // close frame to send once the queue is drained (or at once if urgent)
	urgent   bool
	dropped  bool
	wake     chan struct{}
	readDone chan struct{}
}

// serveTerminalSocket upgrades the request and runs the connection's open sequence: resize when
// both dimensions were given, validate the cursor, send ready, then replay and stream.
func serveTerminalSocket(w http.ResponseWriter, r *http.Request, term *terminal, cursor string, cols, rows int) {
	ws, err := termUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered the handshake with an error status
	}
	_ = ws.NetConn().SetDeadline(time.Time{})
	ws.SetReadLimit(termReadLimit)
	ctx, cancel := context.WithCancel(context.Background())
	c := &termConn{term: term, ws: ws, ctx: ctx, cancel: cancel,
		wake: make(chan struct{}, 1), readDone: make(chan struct{})}
	if !term.addConn(c) {
		// The incarnation ended between lookup and upgrade: behave like a vanished container.
		cancel()
		_ = ws.NetConn().Close()
		return
	}
	go c.readLoop()
	go c.writeLoop()

	if cols > 0 && rows > 0 {
		if err := term.resize(cols, rows); err != nil {
			c.failOpen(err.Error())
			return
		}
	}
	var after uint64
	if cursor != "" {
		seq, err := term.log.ParseCursor(cursor)
		if err != nil {
			c.failOpen(err.Error())
			return
		}
		after = seq
	}
	ready := []byte(`{"type":"ready"}`)
	if cursor != "" {
		ready, _ = json.Marshal(struct {
			Type   string `json:"type"`
			Cursor string `json:"cursor"`
		}{"ready", cursor})
	}
	if !c.enqueue(outFrame{text: ready}) {
		return
	}
	c.catchUp(after)
}

// failOpen reports an open failure: an error message, then close 1011 with the message as reason.
func (c *termConn) failOpen(msg string) {
	c.enqueue(outFrame{text: errorMessage(msg, "", "")})
	c.closeAfterQueue(closeReq{websocket.CloseInternalServerErr, msg})
}

func errorMessage(msg, cursor, code string) []byte {
	b, _ := json.Marshal(struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Cursor  string `json:"cursor,omitempty"`
		Code    string `json:"code,omitempty"`
	}{"error", msg, cursor, code})
	return b
}

var invalidControl = []byte(`{"type":"error","message":"Invalid control message"}`)

// catchUp replays the retained output after seq after, then hands the connection to the PTY
// reader, which pushes each new chunk into the send queue as it is stored. The hand-over happens
// under the terminal's feed lock, where no chunk can be stored in between, so nothing is sent
// twice or skipped; and the PTY reader never waits for a client (a full queue means 1013).
func (c *termConn) catchUp(after uint64) {
	term := c.term
	log := term.log
	batch := make([]seqlog.Event, 0, termBatch)
	for c.ctx.Err() == nil {
		reader := log.Subscribe(after, false) // what exists now
		for {
			evs, err := reader.NextBatch(c.ctx, batch[:0], termBatch)
			for _, ev := range evs {
				switch ev.Kind {
				case seqlog.Truncated:
					after = ev.Seq - 1
					if !c.enqueue(outFrame{text: truncatedMsg}) {
						return
					}
				case seqlog.Stdout, seqlog.Stderr:
					after = ev.Seq
					if !c.enqueue(chunkFrame(log, ev.Seq, ev.Data)) {
						return
					}
				case seqlog.Final:
					c.sendFinal(log.Cursor(ev.Seq), ev.Final)
					return
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				// Aborted: the incarnation ended, and its shutdown closes this connection the
				// right way (1012 or a drop). Make sure it ends even if not.
				c.mu.Lock()
				closing := c.closing != nil
				c.mu.Unlock()
				if !closing {
					c.drop()
				}
				return
			}
		}
		term.feedMu.Lock()
		st := log.Stats()
		switch {
		case st.Aborted:
			term.feedMu.Unlock()
			return
		case st.Last == after && st.Finished:
			// Resumed at (or after) the end: nothing more will come.
			term.feedMu.Unlock()
			c.closeAfterQueue(closeComplete)
			return
		case st.Last == after:
			term.live[c] = struct{}{}
			term.feedMu.Unlock()
			return
		}
		term.feedMu.Unlock() // more arrived meanwhile: replay it too
	}
}

var truncatedMsg = []byte(`{"type":"truncated"}`)

// chunkFrame is a chunk header and its bytes as one queue item.
func chunkFrame(log *seqlog.Log, seq uint64, data []byte) outFrame {
	text := make([]byte, 0, 128)
	text = append(text, `{"type":"chunk","cursor":"`...)
	text = log.AppendCursor(text, seq)
	text = append(text, `","byteLength":`...)
	text = strconv.AppendInt(text, int64(len(data)), 10)
	text = append(text, '}')
	return outFrame{text: text, bin: data}
}

// sendFinal queues the exit (or error) message and the close that follows it.
func (c *termConn) sendFinal(cursor string, final any) {
	f, _ := final.(termFinal)
	if f.err != nil {
		c.enqueue(outFrame{text: errorMessage(f.err.Message, cursor, f.err.Code)})
		c.closeAfterQueue(closeTermError)
		return
	}
	exit := f.exit
	if exit == nil {
		exit = &termExit{}
	}
	b, _ := json.Marshal(struct {
		Type   string    `json:"type"`
		Cursor string    `json:"cursor"`
		Exit   *termExit `json:"exit"`
	}{"exit", cursor, exit})
	c.enqueue(outFrame{text: b})
	c.closeAfterQueue(closeExited)
}

// enqueue adds a frame to the send queue. When the queue would exceed its bound the connection is
// closed with 1013 instead; it reports false once the connection is closing.
func (c *termConn) enqueue(f outFrame) bool {
	c.mu.Lock()
	if c.closing != nil || c.dropped {
		c.mu.Unlock()
		return false
	}
	if c.pending+f.size() > termSendQueueLimit && c.pending > 0 {
		c.queue = nil
		c.closing = &closeBackpress
		c.urgent = true
		c.mu.Unlock()
		termBackpressureCount.Add(1)
		c.signal()
		return false
	}
	c.queue = append(c.queue, f)
	c.pending += f.size()
	c.mu.Unlock()
	c.signal()
	return true
}

// closeAfterQueue sends req once everything queued before it was written.
func (c *termConn) closeAfterQueue(req closeReq) {
	c.mu.Lock()
	if c.closing == nil && !c.dropped {
		c.closing = &req
	}
	c.mu.Unlock()
	c.signal()
}

// closeWith discards what is queued and sends req as soon as the current write finishes.
func (c *termConn) closeWith(req closeReq) {
	c.mu.Lock()
	if !c.dropped && (c.closing == nil || !c.urgent) {
		c.queue = nil
		c.closing = &req
		c.urgent = true
	}
	c.mu.Unlock()
	c.signal()
}

// drop ends the connection without a close frame, as a dying container does (the client sees 1006).
func (c *termConn) drop() {
	c.mu.Lock()
	c.dropped = true
	c.queue = nil
	c.mu.Unlock()
	c.cancel()
	_ = c.ws.NetConn().Close()
}

func (c *termConn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// writeLoop drains the send queue to the socket and performs the close.
func (c *termConn) writeLoop() {
	defer c.finish()
	for {
		select {
		case <-c.wake:
		case <-c.ctx.Done():
			return
		}
		for {
			c.mu.Lock()
			if c.dropped {
				c.mu.Unlock()
				return
			}
			if len(c.queue) == 0 || c.urgent {
				closing := c.closing
				c.queue = nil
				c.mu.Unlock()
				if closing != nil {
					c.sendClose(*closing)
					return
				}
				break
			}
			f := c.queue[0]
			c.queue[0] = outFrame{}
			c.queue = c.queue[1:]
			c.mu.Unlock()
			if err := c.writeFrame(f); err != nil {
				return
			}
			c.mu.Lock()
			c.pending -= f.size()
			c.mu.Unlock()
		}
	}
}

func (c *termConn) writeFrame(f outFrame) error {
	_ = c.ws.SetWriteDeadline(time.Now().Add(termWriteTimeout))
	if err := c.ws.WriteMessage(websocket.TextMessage, f.text); err != nil {
		return err
	}
	if f.bin == nil {
		return nil
	}
	_ = c.ws.SetWriteDeadline(time.Now().Add(termWriteTimeout))
	return c.ws.WriteMessage(websocket.BinaryMessage, f.bin)
}

// sendClose writes the close frame and gives the client a moment to answer before the TCP
// connection is closed.
func (c *termConn) sendClose(req closeReq) {
	msg := websocket.FormatCloseMessage(req.code, truncateReason(req.reason))
	if err := c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(termWriteTimeout)); err != nil {
		return
	}
	t := time.NewTimer(termCloseWait)
	defer t.Stop()
	select {
	case <-c.readDone:
	case <-t.C:
	}
}

// truncateReason keeps a close reason within the 123 bytes a close frame allows.
func truncateReason(s string) string {
	if len(s) <= 123 {
		return s
	}
	return s[:123]
}

// finish releases the connection: goroutines stop, the socket closes, the terminal forgets it.
func (c *termConn) finish() {
	c.cancel()
	_ = c.ws.NetConn().Close()
	c.term.removeConn(c)
}

// readLoop handles client frames: binary is PTY input, text is a control message.
func (c *termConn) readLoop() {
	defer close(c.readDone)
	defer c.cancel()
	for {
		mt, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		switch mt {
		case websocket.BinaryMessage:
			c.term.write(data)
		case websocket.TextMessage:
			if !c.control(data) {
				c.enqueue(outFrame{text: invalidControl})
			}
		}
	}
}

// control applies one control message; false means it was not a valid one.
func (c *termConn) control(data []byte) bool {
	ctl, ok := parseControl(data)
	if !ok {
		return false
	}
	switch ctl.kind {
	case "resize":
		return c.term.resize(ctl.cols, ctl.rows) == nil
	case "interrupt":
		_ = c.term.interrupt()
	case "terminate":
		_ = c.term.terminate()
	}
	return true
}

// controlMsg is a decoded client control message.
type controlMsg struct {
	kind       string // "resize", "interrupt" or "terminate"
	cols, rows int    // resize only, both > 0
}

// parseControl decodes a text frame; ok is false for anything that is not a valid control.
func parseControl(data []byte) (controlMsg, bool) {
	var msg struct {
		Type string          `json:"type"`
		Cols json.RawMessage `json:"cols"`
		Rows json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(data, &msg); err != nil {
		return controlMsg{}, false
	}
	switch msg.Type {
	case "resize":
		cols, ok1 := positiveInt(jsonNumber(msg.Cols))
		rows, ok2 := positiveInt(jsonNumber(msg.Rows))
		if !ok1 || !ok2 {
			return controlMsg{}, false
		}
		return controlMsg{kind: "resize", cols: cols, rows: rows}, true
	case "interrupt", "terminate":
		return controlMsg{kind: msg.Type}, true
	}
	return controlMsg{}, false
}

// jsonNumber returns raw when it is a JSON number literal, else "" (strings, null, objects are
// not sizes).
func jsonNumber(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if s == "" || !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) {
		return ""
	}
	return s
}
