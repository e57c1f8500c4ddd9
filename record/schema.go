package record

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
)

// SchemaVersion is the version of the on-disk schema. A file with a newer version is not touched
// (it is moved aside with a notice); an older one is migrated by the steps below.
//
// Version 2 keeps captured output in segment files beside the record (see segments.go): its
// chunks rows name where their bytes are and hold none, which version 1 would read as empty
// output, so it moves a version 2 file aside instead.
const SchemaVersion = 2

// schema is version 2. Times are Unix nanoseconds (UTC).
//
//   - meta: key/value (schema_version, bridge)
//   - runs: one row per sandscope process that opened the record; ended stays NULL when it was
//     killed, which the next start reports
//   - events: every observation (watch, stream, terminal, action, launch, capture, and on stable
//     bridges the runs, sessions and markers sandscope keeps there: source "stable"); body is the
//     Event as JSON, the other columns make the common questions cheap ("every LOST process this
//     week": SELECT … WHERE lost = 1 AND time > ?)
//   - captures: one row per captured process (where capture began, whether earlier bytes were
//     already gone, how much the budget dropped)
//   - chunks: captured output, in arrival order: its bytes are len bytes at off in segment seg
//     (data empty), or, in rows written by version 1 (seg 0), data itself
//   - segments: the segment files of captured output; run is the sandscope run that appends to
//     one, open says it still may (1), no longer does (0), or the file was removed (-1: the row
//     stays, so a number is never used twice)
//   - capture_total: one row, the sum of captures.bytes (kept by triggers)
//   - states: a sandbox's state folded up to an event (upto, covering events rows), by the
//     executable whose Go build ID is build: a cache that spares folding a long history from its
//     first event (snapshot.go)
var schema = []string{
	`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS runs (
		id INTEGER PRIMARY KEY,
		started INTEGER NOT NULL,
		ended INTEGER,
		version TEXT NOT NULL,
		pid INTEGER NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS events (
		id INTEGER PRIMARY KEY,
		run INTEGER NOT NULL,
		time INTEGER NOT NULL,
		sandbox TEXT NOT NULL,
		source TEXT NOT NULL,
		kind TEXT NOT NULL,
		entity TEXT NOT NULL DEFAULT '',
		entity_id TEXT NOT NULL DEFAULT '',
		incarnation INTEGER NOT NULL DEFAULT 0,
		lost INTEGER NOT NULL DEFAULT 0,
		cursor TEXT NOT NULL DEFAULT '',
		body TEXT NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS events_sandbox ON events (sandbox, id)`,
	`CREATE INDEX IF NOT EXISTS events_entity ON events (sandbox, entity_id, id)`,
	`CREATE INDEX IF NOT EXISTS events_time ON events (time)`,
	`CREATE INDEX IF NOT EXISTS events_source ON events (source, sandbox)`,
	`CREATE INDEX IF NOT EXISTS events_lost ON events (lost, time) WHERE lost = 1`,
	// each sandbox's forgets, for KnownSandboxes without reading every event (added to existing
	// files at their next open; the schema version is unchanged)
	`CREATE INDEX IF NOT EXISTS events_forget ON events (sandbox, id) WHERE source = 'action' AND kind = 'forget'`,
	`CREATE TABLE IF NOT EXISTS captures (
		sandbox TEXT NOT NULL,
		process TEXT NOT NULL,
		began INTEGER NOT NULL,
		began_cursor TEXT NOT NULL DEFAULT '',
		earlier_gone INTEGER NOT NULL DEFAULT 0,
		gone_reason TEXT NOT NULL DEFAULT '',
		dropped INTEGER NOT NULL DEFAULT 0,
		bytes INTEGER NOT NULL DEFAULT 0,
		last_cursor TEXT NOT NULL DEFAULT '',
		updated INTEGER NOT NULL,
		ended TEXT NOT NULL DEFAULT '',
		PRIMARY KEY (sandbox, process))`,
	`CREATE TABLE IF NOT EXISTS chunks (
		id INTEGER PRIMARY KEY,
		sandbox TEXT NOT NULL,
		process TEXT NOT NULL,
		time INTEGER NOT NULL,
		cursor TEXT NOT NULL DEFAULT '',
		stream INTEGER NOT NULL DEFAULT 0,
		data BLOB NOT NULL,
		seg INTEGER NOT NULL DEFAULT 0,
		off INTEGER NOT NULL DEFAULT 0,
		len INTEGER NOT NULL DEFAULT 0)`,
	`CREATE INDEX IF NOT EXISTS chunks_process ON chunks (sandbox, process, id)`,
	// pruning by age at every open: without them it read every output row and capture
	`CREATE INDEX IF NOT EXISTS chunks_time ON chunks (time)`,
	`CREATE INDEX IF NOT EXISTS captures_updated ON captures (updated, bytes)`,
	`CREATE TABLE IF NOT EXISTS segments (
		id INTEGER PRIMARY KEY,
		run INTEGER NOT NULL,
		open INTEGER NOT NULL DEFAULT 1)`,
	// live bytes per segment (reclaim), without reading the rows
	`CREATE INDEX IF NOT EXISTS chunks_seg ON chunks (seg, off, len)`,
	// the captures' total, kept by triggers on every change of a capture's bytes, whoever makes
	// it: pruning checks the total budget at every open, and summing every capture's row took
	// 1 ms of an open of 10,000 runs (0.14 ms of 1,000; figure 13a). Added to existing files at
	// their next open (the schema version is unchanged), from the sum of their captures then.
	`CREATE TABLE IF NOT EXISTS states (sandbox TEXT PRIMARY KEY, upto INTEGER NOT NULL, events INTEGER NOT NULL,
		build TEXT NOT NULL, body BLOB NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS capture_total (id INTEGER PRIMARY KEY CHECK (id = 1), bytes INTEGER NOT NULL)`,
	`INSERT OR IGNORE INTO capture_total (id, bytes) SELECT 1, COALESCE(SUM(bytes), 0) FROM captures`,
	`CREATE TRIGGER IF NOT EXISTS capture_total_insert AFTER INSERT ON captures
		BEGIN UPDATE capture_total SET bytes = bytes + NEW.bytes WHERE id = 1; END`,
	`CREATE TRIGGER IF NOT EXISTS capture_total_update AFTER UPDATE OF bytes ON captures
		BEGIN UPDATE capture_total SET bytes = bytes - OLD.bytes + NEW.bytes WHERE id = 1; END`,
	`CREATE TRIGGER IF NOT EXISTS capture_total_delete AFTER DELETE ON captures
		BEGIN UPDATE capture_total SET bytes = bytes - OLD.bytes WHERE id = 1; END`,
}

// migrate brings a file of an older schema version up to this one, in tx, before the schema's
// statements run: version 1's chunks gain the columns naming a segment (its rows keep their
// bytes in data and read as before).
func migrate(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, "SELECT name FROM pragma_table_info('chunks')")
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	cols := map[string]bool{}
	for rows.Next() {
		var name string
		if rows.Scan(&name) == nil {
			cols[name] = true
		}
	}
	rows.Close()
	if len(cols) == 0 || cols["seg"] {
		return nil // a new file (the schema makes it), or already migrated
	}
	for _, c := range []string{"seg", "off", "len"} {
		if _, err := tx.ExecContext(ctx, "ALTER TABLE chunks ADD COLUMN "+c+" INTEGER NOT NULL DEFAULT 0"); err != nil {
			return fmt.Errorf("schema: migrate output rows: %w", err)
		}
	}
	return nil
}

// schemaStamp names the statements of schema. prepare keeps it in the file's user_version once
// they ran, so that an open of a file that has them all (every open but the first of a version
// that adds one) skips them: parsing them was about a fifth of what a command paid to record.
// Another sandscope version's schema has another stamp, so it runs its own statements again.
var schemaStamp = func() int64 {
	h := fnv.New32a()
	for _, s := range schema {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return int64(h.Sum32()&0x7fffffff | 1) // a positive int32, never 0 (a new file's)
}()

// schemaStateQuery reads what prepare compares: the schema version and bridge in meta, and the
// stamp of the statements that made the file (it fails on a file without meta: a new one).
const schemaStateQuery = `SELECT (SELECT value FROM meta WHERE key = 'schema_version'),
	(SELECT value FROM meta WHERE key = 'bridge'), (SELECT user_version FROM pragma_user_version)`
