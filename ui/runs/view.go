package runs

import (
	"fmt"
	"strings"
	"time"

	"sandscope/client"
	"sandscope/record"
	"sandscope/themes"
	"sandscope/ui/common"
	"sandscope/ui/components"
	"sandscope/vocab"
)

// listHeight is the table's rows: the screen minus title, table head and the detail line.
func (m *Model) listHeight() int { return max(m.height-3, 1) }

// columns, by priority: at 80 columns STATE, SANDBOX and COMMAND keep their place while the
// stream health, ID, incarnation and times give way.
var columns = []components.Column{
	{Title: "STATE", Min: 11, Want: 24, Priority: 0},
	{Title: "SANDBOX", Min: 8, Want: 16, Priority: 0},
	{Title: "INC", Min: 4, Priority: 3},
	{Title: "ID", Min: 8, Priority: 4},
	{Title: "COMMAND", Min: 14, Want: 48, Priority: 0, Flex: true},
	{Title: "AGE", Min: 6, Priority: 1},
	{Title: "OUTPUT", Min: 8, Want: 12, Priority: 2},
	{Title: "STREAM", Min: 10, Want: 40, Priority: 2},
}

// View renders the title (counts, filter, order), the table and the selected run's detail.
func (m *Model) View() string {
	st := m.ctx.Styles
	w := m.width
	now := m.ctx.Clock()
	lh := m.listHeight()
	m.list.SetHeight(lh)
	for _, i := range m.list.Window() {
		if m.rowAt(i) == nil {
			m.readAll() // a taller screen than the first frame's, before readRest's answer
			break
		}
	}
	var b strings.Builder

	need := m.need
	// while the record still reads sandboxes' histories (the first seconds after a start), the
	// counts are of those read so far, and say so
	reading, sofar := m.reading(), ""
	if reading > 0 {
		sofar = " so far"
	}
	title := st.Title.Render(fmt.Sprintf("All runs (%d%s)", m.all.Len(), sofar))
	if m.attention {
		title = st.Title.Render(fmt.Sprintf("Runs needing attention (%d of %d%s)", len(m.narrowed), m.all.Len(), sofar))
	}
	facts := vocab.Count(m.listed(), "sandbox|sandboxes")
	if reading > 0 {
		facts += fmt.Sprintf(", %d still being read", reading)
	}
	if need > 0 && !m.attention {
		verb, them := attentionWords(need)
		facts += " · " + st.Badge(attentionBadge).Render(fmt.Sprintf("%d %s attention", need, verb)) + st.Faint.Render(" ("+m.ctx.Keys.Attention.Help().Key+" shows "+them+")")
	} else if !m.attention && reading == 0 {
		facts += " · none needs attention" // said once every run is counted: one not counted may
	}
	title += "  " + st.Faint.Render(facts)
	if ls := m.list.Status(); ls != "" {
		title += "  " + st.Info.Render(ls)
	}
	b.WriteString(common.Fit(title, w) + "\n")

	cols := components.Layout(m.natural, max(w-2, 1))
	head := make([]string, len(columns))
	for i, c := range columns {
		head[i] = c.Title
	}
	b.WriteString("  " + st.TableHead.Render(common.Fit(joinShown(head, cols), max(w-2, 0))) + "\n")

	n := 0
	if msg := m.empty(); msg != "" {
		b.WriteString(st.Faint.Render(common.Fit("  "+msg, w)) + "\n")
		n++
	}
	for _, i := range m.list.Window() {
		if n >= lh {
			break
		}
		b.WriteString(m.renderRow(i, cols, now) + "\n")
		n++
	}
	for ; n < lh; n++ {
		b.WriteString("\n")
	}
	b.WriteString(st.Faint.Render(common.Fit(common.SanitizeText(m.detail(now)), w)))
	if out := b.String(); m.height > 0 && strings.Count(out, "\n") >= m.height {
		// a body shorter than title, head, one row and the detail: the frame keeps its height
		return strings.Join(strings.SplitN(out, "\n", m.height+1)[:m.height], "\n")
	}
	return b.String()
}

// attentionBadge colours the count of runs needing attention.
const attentionBadge = themes.BadgeLost

// empty is the plain sentence shown when there is no row to show ("" when there are rows).
func (m *Model) empty() string {
	k := m.ctx.Keys
	switch {
	case m.ctx.Record == nil:
		why := m.ctx.NotRecorded
		if why == "" {
			why = "no state directory"
		}
		return "Nothing is recorded here (" + common.SanitizeText(why) + "), so there is no list of every run; open a sandbox to see its processes."
	case m.all.Len() == 0 && m.listed() == 0:
		return "No sandbox is watched yet: add or create one on the sandboxes screen and its runs appear here."
	case m.all.Len() == 0:
		return fmt.Sprintf("No process or terminal has been seen yet in %s.", vocab.Count(m.listed(), "watched sandbox|watched sandboxes"))
	case len(m.narrowed) == 0 && m.attention:
		return fmt.Sprintf("No run needs attention: nothing is LOST, SUSPECT END or STALE. %s shows every run.", k.Attention.Help().Key)
	case m.list.Len() == 0:
		return fmt.Sprintf("No run matches %q; %s clears the filter.", m.list.Filter(), k.Back.Help().Key)
	}
	return ""
}

func (m *Model) renderRow(i int, cols []int, now time.Time) string {
	st := m.ctx.Styles
	w := m.width
	r := m.rowAt(i)
	shown := cells(r, now)
	shown[0] = st.BadgeText(r.badge, common.Fit(r.label, cols[0]))
	if m.list.IsCursor(i) {
		plain := make([]string, len(shown))
		for j, c := range shown {
			plain[j] = common.StripANSI(c)
		}
		return st.Selected.Render("> " + common.Fit(joinShown(plain, cols), max(w-2, 0)))
	}
	line := joinShown(shown, cols)
	if r.cond == common.Stale {
		return "  " + st.Stale.Render(common.Fit(common.StripANSI(line), max(w-2, 0)))
	}
	return "  " + common.Fit(line, max(w-2, 0))
}

// cells are what a run's row shows, plain, column by column: the table draws them, sizes its
// columns by them and filters on them.
func cells(r *row, now time.Time) []string {
	inc := "-"
	if r.e.Incarnation > 0 {
		inc = fmt.Sprintf("#%d", r.e.Incarnation)
		if r.e.Inferred {
			inc += "?"
		}
	}
	id := common.SanitizeText(client.ShortID(r.e.ID))
	cmd := common.Argv(r.e.Command())
	if r.e.Kind == record.Terminal {
		if cmd == "" {
			cmd = "(default shell)"
		}
		cmd = "terminal: " + cmd
	}
	output := "-"
	if !r.out.Last.IsZero() {
		output = common.Since(now, r.out.Last)
	}
	age := "-"
	if !r.started.IsZero() {
		age = common.Age(now.Sub(r.started))
	}
	return []string{r.label, common.SanitizeText(r.sandbox), inc, id, cmd, age, output, health(r)}
}

// health is the stream health of a run: what its last stream event said, the gaps and
// interruptions its streams had, and whether its output is being captured.
func health(r *row) string {
	e := r.e
	var parts []string
	switch e.Stream {
	case "interrupted", "reconnecting", "terminal interrupted":
		if e.State() == "running" && !e.Lost {
			parts = append(parts, "interrupted")
		}
	case "suspect end":
		if r.suspect {
			parts = append(parts, "suspect end")
		}
	case "failed":
		if !e.Lost { // a LOST run's follower fails with it: the badge says it all
			parts = append(parts, "failed")
		}
	}
	if e.Gaps > 0 {
		parts = append(parts, vocab.Count(e.Gaps, "gap"))
	}
	if e.Interruptions > 0 {
		parts = append(parts, vocab.Count(e.Interruptions, "break"))
	}
	if e.Kind == record.Process {
		switch {
		case r.capturing:
			parts = append(parts, "capturing")
		case r.out.Found && r.out.Bytes > 0:
			parts = append(parts, common.Bytes(r.out.Bytes)+" kept")
		case !r.out.Found && (r.cond == common.Lost || r.cond == common.Stale):
			parts = append(parts, "no capture")
		}
	}
	if len(parts) == 0 {
		return "ok"
	}
	return strings.Join(parts, " · ")
}

// detail says more about the selected run: why it is LOST, STALE or SUSPECT END, and what enter
// does.
func (m *Model) detail(now time.Time) string {
	r := m.selected()
	if r == nil {
		return ""
	}
	k := m.ctx.Keys
	what := "process " + r.e.ID
	if r.e.Kind == record.Terminal {
		what = "terminal " + r.e.ID
	}
	prefix := r.sandbox + " · " + what + ": "
	if r.e.Earlier {
		prefix += "seen by an earlier run of sandscope; "
	}
	switch {
	case r.cond == common.Lost:
		why := strings.Join(r.e.Evidence, "; ")
		if why == "" {
			why = "it vanished with its container"
		}
		if r.e.Kind == record.Terminal {
			return prefix + "LOST (" + why + ")"
		}
		return prefix + "LOST (" + why + "); " + k.Open.Help().Key + " opens what was captured"
	case r.cond == common.Stale:
		return fmt.Sprintf("%sbelongs to incarnation #%d, an earlier container; %s opens what the record kept", prefix, r.e.Incarnation, k.Open.Help().Key)
	case r.suspect:
		return fmt.Sprintf("%sits stream ended %s but the last status said running: the ending is not confirmed", prefix, common.Since(now, r.e.StreamAt))
	case r.cond == common.Unknown:
		return prefix + "the bridge is not answering; last confirmed " + common.Since(now, r.e.LastSeen)
	}
	if r.e.Kind == record.Terminal {
		return prefix + k.Open.Help().Key + " opens it in the pane"
	}
	return prefix + k.Open.Help().Key + " opens its log"
}

// joinShown joins the cells of the columns Layout kept (width 0: hidden), each fitted.
func joinShown(cells []string, widths []int) string {
	parts := make([]string, 0, len(cells))
	for i, c := range cells {
		if widths[i] > 0 {
			parts = append(parts, common.Fit(c, widths[i]))
		}
	}
	return strings.Join(parts, " ")
}

// attentionWords are the title's verb and pronoun for need runs needing attention ("1 needs
// attention (! shows it)", "3 need attention (! shows them)").
func attentionWords(need int) (verb, them string) {
	if need == 1 {
		return "needs", "it"
	}
	return "need", "them"
}
