package demo

import (
	"context"
	"errors"
	"testing"
	"time"

	"sandscope/client"
	"sandscope/localbridge/bridgetest"
)

// The whole scene against the real local bridge, sped up: everything starts, the replacement
// leaves the first agent unknown to the bridge (LOST), and the relaunched agent runs in the new
// incarnation.
func TestSceneOnLocalBridge(t *testing.T) {
	b := bridgetest.Start(t)
	c, err := client.New(b.URL, client.WithToken(b.Token))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	sc, err := RunScene(ctx, c, Options{Speed: 40, ReplaceAfter: 25 * time.Second, Log: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Replaced {
		t.Fatal("the local bridge must support the replacement")
	}

	if _, err := c.GetProcess(ctx, sc.Sandbox, sc.Agent.ID); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("first agent after the replacement: err = %v, want not found (LOST)", err)
	}
	for _, id := range []string{sc.Build.ID, sc.Tests.ID} {
		if _, err := c.GetProcess(ctx, sc.Sandbox, id); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("process %s of the old incarnation: err = %v, want not found", id, err)
		}
	}
	agent2, err := c.GetProcess(ctx, sc.Sandbox, sc.Agent2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if agent2.State != "running" {
		t.Fatalf("relaunched agent state %q", agent2.State)
	}
	if sc.Agent.Incarnation != 0 && agent2.Incarnation <= sc.Agent.Incarnation {
		t.Fatalf("relaunched agent incarnation %d, first %d", agent2.Incarnation, sc.Agent.Incarnation)
	}
	if _, err := c.GetTerminal(ctx, sc.Sandbox, sc.Terminal2.ID); err != nil {
		t.Fatalf("terminal in the new incarnation: %v", err)
	}

	// The relaunched agent streams the resumed script to its end.
	var out []byte
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, err := c.GetProcess(ctx, sc.Sandbox, sc.Agent2.ID)
		if err != nil {
			t.Fatal(err)
		}
		if p.State == "exited" {
			if p.Exit == nil || p.Exit.Code != 0 {
				t.Fatalf("agent exit %+v", p.Exit)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("relaunched agent did not finish")
		}
		time.Sleep(200 * time.Millisecond)
	}
	stream, err := c.Logs(ctx, sc.Sandbox, sc.Agent2.ID, client.LogQuery{Replay: true})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	for {
		ev, err := stream.Next()
		if err != nil {
			break
		}
		if ev.Type == "stdout" {
			out = append(out, ev.Data...)
		}
	}
	if string(out) != expectedAgentOutput(true) {
		t.Fatalf("relaunched agent output differs (%d bytes, want %d)", len(out), len(expectedAgentOutput(true)))
	}
}
