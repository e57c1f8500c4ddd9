// Package jsonl renders one line of an agent's JSON output (JSON Lines) as a compact, one-line
// summary for sandscope's log view: the event type, role, tool and name fields picked out, message
// text shortened to the width, nested content summarised. It knows the common shapes — Claude Code
// stream-json (system/assistant/user/result events, content blocks of text, thinking, tool_use and
// tool_result), generic {"role","content"} chat messages (with OpenAI-style tool_calls), and
// {"event","data"} envelopes, and typed streaming envelopes that wrap one block in item, delta,
// part or content_block (item.completed with agent_message/reasoning/command_execution,
// content_block_delta) — and falls back to key=value pairs for any other object.
//
// Render returns Segments, each with a Class; the caller maps classes to its own styles (Style takes
// a function), so this package holds no colours. A line that is not a JSON object comes back as one
// sanitised Plain segment with JSON false. A line cut short (a capped display line) is parsed as far as
// it goes and flagged Truncated.
//
// Every string taken from the JSON is sanitised (package sanitize, SGR stripped) and whitespace runs
// are folded to one space, so the result is always one safe screen line. This package must never
// import Bubble Tea or build styles itself.
package jsonl
