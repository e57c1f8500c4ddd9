// Package demo fills a bridge with a scene that looks like real work, for first runs, screenshots
// and trying sandscope without a project at hand: in sandbox "demo", a coding agent streaming
// Claude-Code-like JSONL, a build writing to stdout and stderr, a test run that fails with exit 2 and
// a shell terminal; then one container replacement, so the timeline shows two incarnations and a LOST
// agent, and the agent relaunched in the new container.
//
// Its process scripts need only sh and coreutils, so the scene also runs on a real Cloudflare
// container; on sandscope's local bridge the agent can be the sandscope binary itself (the hidden
// `sandscope demo agent`). The content is fixed text and fixed pacing, so screenshots repeat. The
// package never touches sandboxes other than the one it is given and never sends a token anywhere
// but through the client it is handed.
package demo
