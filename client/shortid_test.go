package client_test

import (
	"testing"

	"sandscope/client"
)

func TestShortID(t *testing.T) {
	for id, want := range map[string]string{
		"20261202T161500Z-1a2b3c4d":            "1a2b3c4d",
		"20261202T161500Z-1a2b3c4d5e":          "1a2b3c4d",
		"7e9b0f67-3c2a-4d8e-9f10-aabbccddeeff": "7e9b0f67",
		"abc":                                  "abc",
		"2026120xT161500Z-1a2b3c4d":            "2026120x",
		"":                                     "",
	} {
		if got := client.ShortID(id); got != want {
			t.Errorf("ShortID(%q) = %q, want %q", id, got, want)
		}
	}
}

func TestIDMatches(t *testing.T) {
	run := "20261202T161500Z-1a2b3c4d"
	for want, ok := range map[string]bool{run: true, "20261202": true, "1a2b": true, "1a2b3c4d": true, "2b3c": false, "": false} {
		if got := client.IDMatches(run, want); got != ok {
			t.Errorf("IDMatches(%q, %q) = %v", run, want, got)
		}
	}
	if client.IDMatches("7e9b0f67-3c2a", "3c2a") {
		t.Error("a UUID's later group matched")
	}
}
