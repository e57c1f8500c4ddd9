package logview

import (
	"regexp"
	"strings"
	"testing"

	"sandscope/client"
	"sandscope/followall"
	"sandscope/ui/common"
	"sandscope/ui/internal/uitest"
)

// TestFollowAllJoinsNewProcessesWithStablePrefixes follows every process of a sandbox with no
// record (the view's own watcher): a process that starts later joins with a note under its
// prefix, each line carries its process's follow-all name, and endings and losses are marked
// under the prefix of the process they are about.
func TestFollowAllJoinsNewProcessesWithStablePrefixes(t *testing.T) {
	br := uitest.NewBridge()
	ctx := uitest.Context(t, br, 120, 20)
	sb := "sandboxaaaaaaaaaaaaaaaaa"
	first := common.LogTarget{Sandbox: sb, Incarnation: 1, Process: client.Process{ID: "1111aaaa-build", Command: []string{"make", "all"}, State: "running"}}
	m := New(ctx, []common.LogTarget{first}, Options{All: sb})
	m.SetSize(120, 20)
	t.Cleanup(m.Close)
	m.Init()
	if !br.Called("watch " + sb) {
		t.Fatal("no watcher for processes that start later")
	}
	later := client.Process{ID: "2222bbbb-agent", Command: []string{"sh", "-c", "run", "agent"}, State: "running"}
	m.Update(allWatchMsg{owner: m, gen: m.gen, events: []client.SandboxEvent{
		{Kind: client.ProcessAppeared, Process: &first.Process, Incarnation: client.Incarnation{Number: 1}}, // already followed
		{Kind: client.ProcessAppeared, Process: &later, Incarnation: client.Incarnation{Number: 1}},
	}})
	if len(m.sources) != 2 || !br.Called("follow 2222bbbb-agent") {
		t.Fatalf("the later process did not join once: %d sources", len(m.sources))
	}
	feed(m, 0, data(1, client.Stdout, "c1", "compiling\n"))
	feed(m, 1, data(2, client.Stdout, "d1", "thinking\n"))
	feed(m, 0, client.LogEvent{Kind: client.Ended, Time: at(3), Status: &client.Process{ID: first.Process.ID, State: "exited", Exit: &client.Exit{Code: 0}}})
	feed(m, 1, client.LogEvent{Kind: client.Lost, Time: at(4), Loss: &client.LossEvidence{Incarnation: 2}})
	v := m.View()
	bn, an := followall.Name(first.Process), followall.Name(later)
	if bn != "make-1111aaaa" || an != "agent-2222bbbb" {
		t.Fatalf("names %q %q", bn, an)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(regexp.QuoteMeta(an) + `\s+── note: joined: following sh -c … agent \(RUNNING, incarnation 1\)`),
		regexp.MustCompile(regexp.QuoteMeta(bn) + `\s+compiling`),
		regexp.MustCompile(regexp.QuoteMeta(an) + `\s+thinking`),
		regexp.MustCompile(regexp.QuoteMeta(bn) + `\s+── ENDED: EXITED 0`),
		regexp.MustCompile(regexp.QuoteMeta(an) + `\s+── LOST`),
	} {
		if !want.MatchString(v) {
			t.Errorf("the view lacks %s:\n%s", want, v)
		}
	}
	if !strings.Contains(v, "every process · 2 processes followed · 0 live · 1 ended · 1 LOST · new ones join") {
		t.Errorf("title:\n%s", v)
	}
	// the colour of a prefix is its ID's, not its place in the list
	if m.sources[1].color != followall.Color(later.ID, len(ctx.Styles.Prefixes)) {
		t.Error("the prefix colour is not chosen by the process ID")
	}
}
