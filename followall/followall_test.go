package followall

import (
	"regexp"
	"testing"

	"sandscope/client"
)

func TestNameIsShortStableAndClean(t *testing.T) {
	for _, c := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"/usr/bin/npm", "test"}, "npm-1a2b3c4d"},
		{[]string{"sh", "-c", "echo hi", "agent"}, "agent-1a2b3c4d"},
		{[]string{"\x1b[31mevil\x07"}, "31mevil-1a2b3c4d"},
		{nil, "1a2b3c4d"},
	} {
		if got := Name(client.Process{ID: "1a2b3c4d-5e6f", Command: c.cmd}); got != c.want {
			t.Errorf("Name(%q) = %q, want %q", c.cmd, got, c.want)
		}
	}
}

func TestColorIsStableAndInRange(t *testing.T) {
	for _, id := range []string{"a", "b", "1a2b3c4d-5e6f"} {
		c := Color(id, 10)
		if c < 0 || c >= 10 || c != Color(id, 10) {
			t.Errorf("Color(%q) = %d", id, c)
		}
	}
	if Color("x", 0) != 0 {
		t.Error("no colours: index 0")
	}
}

func TestJoinerFollowsEachKeptProcessOnce(t *testing.T) {
	states, err := ParseStates([]string{"running"})
	if err != nil {
		t.Fatal(err)
	}
	j := Joiner{Filter: Filter{States: states, Pattern: regexp.MustCompile("agent")}}
	run := client.Process{ID: "p1", Command: []string{"agent"}, State: "running"}
	if !j.Join(run, false) || j.Join(run, false) {
		t.Fatal("a kept process joins once")
	}
	if j.Join(client.Process{ID: "p2", Command: []string{"make"}, State: "running"}, false) {
		t.Fatal("the pattern filters")
	}
	ended := client.Process{ID: "p3", Command: []string{"agent"}, State: "exited"}
	if j.Join(ended, false) {
		t.Fatal("an exited process is not running")
	}
	if !j.Join(client.Process{ID: "p4", Command: []string{"agent"}, State: "exited"}, true) {
		t.Fatal("a process that started while watched was running")
	}
	if _, err := ParseStates([]string{"bogus"}); err == nil {
		t.Fatal("a bad state is refused")
	}
}
