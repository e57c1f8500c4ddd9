// Package seqlog is the sequenced output log behind the local bridge's process logs and terminal
// output: one ordered sequence of events per store, each with a sequence number starting at 1,
// bounded retention (bytes and events, oldest evicted first), a final terminal event, and any number
// of concurrent readers that pull from the retained window.
//
// API: New(storeID, maxBytes, maxEvents) makes a Log. The writer calls Append(kind, data) for each
// output chunk (data is copied) and Finish(final) once with the terminal payload; Abort(err) ends the
// log abnormally (container stop or replacement) so readers stop with that error. Cursor(seq) and
// ParseCursor(s) convert between sequence numbers and the bridge's cursor format
// base64url_nopad("v1." + base64url_nopad(storeID) + "." + seq); ParseCursor validates in the
// bridge's order and returns *CursorError values (ErrInvalidCursor, ErrOtherStore, ErrFutureCursor).
// Subscribe(after, follow) / SubscribeLive() make a Reader whose Next / NextBatch return events in
// order, a Truncated marker wherever the reader's next event was evicted, and io.EOF at the end
// (after the terminal event, or at the snapshot end when not following).
//
// It must never make the writer wait for a reader: readers keep only a position, a slow reader is
// overtaken and told so with a Truncated marker, and nothing is buffered per reader.
package seqlog
