// Package otlpexport sends what a record holds to an OpenTelemetry collector over OTLP/HTTP, so a
// team's observability stack (a Collector in front of Tempo/Loki, ClickHouse, Honeycomb, …) sees
// every run sandscope watched, on every bridge, without a server of sandscope's own.
//
// The mapping, and why:
//
//   - Each process, terminal and stable run is a span (one trace per run), from when it started
//     to when it ended or was lost. Its status is Error for LOST, an ending nothing confirms
//     (SUSPECT END: "REPORTED n (unconfirmed)", "ENDED, code unknown"), an interruption that was
//     never resolved, an ERROR ending and a non-zero exit (a signal and a timeout included), with
//     the state word as the status message; else Ok. Attributes: sandscope.bridge.url (the URL
//     without credentials, query or fragment), sandscope.bridge.dialect, sandscope.sandbox.id,
//     sandscope.incarnation (the record's number of the container life, or the stable marker) and
//     sandscope.incarnation.inferred, sandscope.run.kind (process, terminal, run) and
//     sandscope.run.id, sandscope.command (the summary notices show: a shell script's body
//     elided; environment values are never recorded, so never sent), process.exit.code,
//     sandscope.exit.signal, sandscope.exit.timed_out, sandscope.state (the final state word:
//     "EXITED 3", "LOST", "KILLED TERM"), and counts of gaps, interruptions and suspect ends. The
//     span name is the kind and the program ("process python"): low in cardinality, unlike IDs.
//     A span is sent when its run reaches a final state, and again, with the same IDs, if that
//     state changes (an interrupted stable run resolved later).
//   - Trace and span IDs are a hash of the run's identity: the bridge's record identity, the
//     sandbox, the incarnation, the kind and the run ID. A run sent twice (a crash between the
//     send and the saved position, two sandscope processes exporting one record) is the same span
//     to the backend, and log records can point at a span before it is sent.
//   - Each marker — an interruption, a resume, a gap (sandscope.gap.bytes, sandscope.reason), a
//     suspect end, a loss (sandscope.evidence), an incarnation change (the previous and new
//     incarnation, with evidence) — is a span event on its run and a log record (event name
//     sandscope.<marker>, the body in the words of sandscope's notifications, severity WARN, ERROR
//     for a loss, INFO for a resume), linked to the run's span. An incarnation change is a
//     sandbox's, not a run's: its log record has no span, and it is a span event of every run it
//     cut short or that ran across it.
//   - With Output (--otlp-output), each line of captured output is a log record linked to its
//     run's span: the body is the line (invalid UTF-8 replaced, nothing else changed), the stream
//     is the log.iostream attribute (stdout, stderr) and the severity INFO, since a stream says
//     nothing about severity. A line the capture stored in two chunks is two records.
//   - The resource: service.name (OTEL_SERVICE_NAME, else otlp.serviceName, else "sandscope"),
//     service.version (sandscope's), host.name, and OTEL_RESOURCE_ATTRIBUTES.
//
// Nothing is lost when the collector is down: the export reads the record after a position kept
// in the record itself, sends a batch (spans, then log records), and moves the position only once
// the collector took all of it. A failed send is retried with backoff (500 ms doubling to 30 s)
// from the same batch, so after an outage what was missed goes first, oldest first; a restart
// resumes from the saved position. Delivery is at least once: spans repeat with the same IDs, and
// every log record carries sandscope.record.event or sandscope.record.chunk for deduplication.
//
// The bridge token is never in the record, so it is in no payload; headers configured for the
// collector are sent only to it.
package otlpexport
