// Package client talks to a sandbox bridge (the Cloudflare Sandbox bridge Worker, or sandscope's
// local bridge) and turns its raw protocol into events that already say what happened: data, gaps,
// interruptions, resumptions, suspect and confirmed endings, lost processes and incarnation changes.
//
// It must never import Bubble Tea or anything UI-shaped: scripts and the command line use it too.
// It must never put the bridge token into an error, a log line or a URL.
package client
