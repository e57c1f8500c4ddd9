package record

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
)

// gate is the connector under a Record's *sql.DB. It lets a repair take the file away from every
// connection of this process and give a new file back, while the *sql.DB (which readers all over
// the package hold) stays the same; and it sees every error a statement returns, so that damage
// met by any read or write is noticed and looked at.
type gate struct {
	drv     *sqlite.Driver
	path    string      // the DSN is made at each connection: it depends on whether the file exists
	damaged func(error) // told (never blocking) when a statement meets SQLite's "damaged"

	gen  atomic.Int64 // connections of an older generation are closed when they come back
	mu   sync.Mutex
	live int           // connections open now
	made atomic.Int64  // connections made (each opens the file and parses its schema)
	hold chan struct{} // non-nil while a repair runs: new connections wait for it
	deny error         // non-nil: no connection can be made (damaged, waiting for its repair)
}

func newGate(path string, damaged func(error)) *gate {
	return &gate{drv: &sqlite.Driver{}, path: path, damaged: damaged}
}

func (g *gate) Driver() driver.Driver { return g.drv }

func (g *gate) Connect(ctx context.Context) (driver.Conn, error) {
	g.mu.Lock()
	for g.hold != nil {
		hold := g.hold
		g.mu.Unlock()
		t := time.NewTimer(openWait)
		select {
		case <-hold:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
			return nil, ErrDamaged
		}
		g.mu.Lock()
	}
	if g.deny != nil {
		err := g.deny
		g.mu.Unlock()
		return nil, err
	}
	g.live++
	gen := g.gen.Load()
	g.mu.Unlock()
	g.made.Add(1)
	c, err := g.drv.Open(dsn(g.path, false))
	if err != nil {
		g.release()
		return nil, g.seen(err)
	}
	return &gconn{Conn: c, g: g, gen: gen}, nil
}

func (g *gate) release() {
	g.mu.Lock()
	g.live--
	g.mu.Unlock()
}

// seen looks at a statement's error: damage is told, and busy or damaged errors say so to
// errors.Is(err, ErrBusy / ErrDamaged), keeping SQLite's own message.
func (g *gate) seen(err error) error {
	switch {
	case err == nil || err == io.EOF || err == driver.ErrSkip || errors.Is(err, driver.ErrBadConn):
		return err
	case isCorrupt(err):
		if g.damaged != nil {
			g.damaged(err)
		}
		return &dbError{err: err, kind: ErrDamaged}
	case isBusy(err):
		return &dbError{err: err, kind: ErrBusy}
	}
	return err
}

// dbError is an SQLite error that is also ErrBusy or ErrDamaged.
type dbError struct {
	err  error
	kind error
}

func (e *dbError) Error() string        { return e.err.Error() }
func (e *dbError) Unwrap() error        { return e.err }
func (e *dbError) Is(target error) bool { return target == e.kind }

// close takes the file away from every connection: new ones wait (hold) until open or deny
// says how to go on, idle ones are closed now, busy ones when they come back. It waits (at
// most bound) for the last one to close.
func (g *gate) close(db *sql.DB, bound time.Duration) {
	g.mu.Lock()
	if g.hold == nil {
		g.hold = make(chan struct{})
	}
	g.gen.Add(1)
	g.mu.Unlock()
	db.SetMaxIdleConns(0)
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		g.mu.Lock()
		n := g.live
		g.mu.Unlock()
		if n <= 0 {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// open lets connections be made again (to whatever file is now at the path).
func (g *gate) open(db *sql.DB) {
	g.mu.Lock()
	g.deny = nil
	if g.hold != nil {
		close(g.hold)
		g.hold = nil
	}
	g.mu.Unlock()
	db.SetMaxIdleConns(maxConns)
}

// refuse makes every connection fail with err until open.
func (g *gate) refuse(err error) {
	g.mu.Lock()
	g.deny = err
	if g.hold != nil {
		close(g.hold)
		g.hold = nil
	}
	g.mu.Unlock()
}

// maxConns bounds a Record's connections.
const maxConns = 4

type gconn struct {
	driver.Conn
	g      *gate
	gen    int64
	closed bool
}

func (c *gconn) stale() bool { return c.gen != c.g.gen.Load() }

func (c *gconn) Close() error {
	err := c.Conn.Close()
	if !c.closed {
		c.closed = true
		c.g.release()
	}
	return err
}

func (c *gconn) Prepare(query string) (driver.Stmt, error) {
	s, err := c.Conn.Prepare(query)
	if err != nil {
		return nil, c.g.seen(err)
	}
	return &gstmt{Stmt: s, g: c.g}, nil
}

func (c *gconn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	p, ok := c.Conn.(driver.ConnPrepareContext)
	if !ok {
		return c.Prepare(query)
	}
	s, err := p.PrepareContext(ctx, query)
	if err != nil {
		return nil, c.g.seen(err)
	}
	return &gstmt{Stmt: s, g: c.g}, nil
}

func (c *gconn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *gconn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	var tx driver.Tx
	var err error
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		tx, err = b.BeginTx(ctx, opts)
	} else {
		tx, err = c.Conn.Begin() //nolint:staticcheck // the driver's fallback
	}
	if err != nil {
		return nil, c.g.seen(err)
	}
	return &gtx{Tx: tx, g: c.g}, nil
}

func (c *gconn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	res, err := e.ExecContext(ctx, query, args)
	return res, c.g.seen(err)
}

func (c *gconn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	rows, err := q.QueryContext(ctx, query, args)
	if err != nil {
		return nil, c.g.seen(err)
	}
	return &grows{Rows: rows, g: c.g}, nil
}

func (c *gconn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return c.g.seen(p.Ping(ctx))
	}
	return nil
}

func (c *gconn) ResetSession(ctx context.Context) error {
	if c.stale() {
		return driver.ErrBadConn
	}
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *gconn) IsValid() bool {
	if c.stale() {
		return false
	}
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

type gstmt struct {
	driver.Stmt
	g *gate
}

func (s *gstmt) Exec(args []driver.Value) (driver.Result, error) {
	res, err := s.Stmt.Exec(args) //nolint:staticcheck // the driver's fallback
	return res, s.g.seen(err)
}

func (s *gstmt) Query(args []driver.Value) (driver.Rows, error) {
	rows, err := s.Stmt.Query(args) //nolint:staticcheck // the driver's fallback
	if err != nil {
		return nil, s.g.seen(err)
	}
	return &grows{Rows: rows, g: s.g}, nil
}

func (s *gstmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	e, ok := s.Stmt.(driver.StmtExecContext)
	if !ok {
		return s.Exec(values(args))
	}
	res, err := e.ExecContext(ctx, args)
	return res, s.g.seen(err)
}

func (s *gstmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := s.Stmt.(driver.StmtQueryContext)
	if !ok {
		return s.Query(values(args))
	}
	rows, err := q.QueryContext(ctx, args)
	if err != nil {
		return nil, s.g.seen(err)
	}
	return &grows{Rows: rows, g: s.g}, nil
}

type grows struct {
	driver.Rows
	g *gate
}

func (r *grows) Next(dest []driver.Value) error { return r.g.seen(r.Rows.Next(dest)) }

type gtx struct {
	driver.Tx
	g *gate
}

func (t *gtx) Commit() error { return t.g.seen(t.Tx.Commit()) }

// values drops the names of a statement's arguments (for a driver statement without context).
func values(args []driver.NamedValue) []driver.Value {
	vals := make([]driver.Value, len(args))
	for i, a := range args {
		vals[i] = a.Value
	}
	return vals
}
