package openapicheck_test

import (
	"net/http"
	"testing"
	"time"

	"sandscope/localbridge/bridgetest"
)

// sb is the sandbox the tests use.
const sb = "testbox"

// hc is the test HTTP client; every call has a deadline.
var hc = &http.Client{Timeout: 60 * time.Second}

type resp = bridgetest.Response

// call performs one request. hdr holds extra headers; auth adds the bridge's bearer token.
func call(t testing.TB, b *bridgetest.Bridge, method, path string, body any, auth bool, hdr ...string) resp {
	t.Helper()
	return b.Call(t, method, path, body, auth, hdr...)
}

type procStatus struct {
	ID string `json:"id"`
}

// waitExit polls until the process is no longer running.
func waitExit(t testing.TB, b *bridgetest.Bridge, sb, id string) {
	t.Helper()
	b.WaitExit(t, sb, id)
}
