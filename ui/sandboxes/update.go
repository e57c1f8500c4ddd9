package sandboxes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/record"
	"sandscope/ui/common"
	"sandscope/ui/components"
)

// Update handles keys, refresh answers and action results.
func (m *Model) Update(msg tea.Msg) (common.Component, tea.Cmd) {
	switch msg := msg.(type) {
	case refreshMsg:
		return m, m.applyRefresh(msg)
	case savedMsg:
		if msg.owner == m {
			m.saveErr = msg.err
		}
		return m, nil
	case tickMsg:
		if msg.owner != m || msg.gen != m.gen || m.inflight {
			return m, nil
		}
		if m.hidden {
			m.paused = true // no request, no redraw while another screen is on top
			return m, nil
		}
		return m, m.refresh()
	case actionMsg:
		return m, m.applyAction(msg)
	case common.KnownMsg:
		m.remember(msg.ID, msg.Source)
		return m, nil
	case tea.MouseMsg:
		return m, m.mouse(msg)
	case tea.KeyMsg:
		if open, cmd := common.RouteToDialog(&m.dialog, msg, m.ctx.Keys, m.answer); open {
			return m, cmd
		}
		return m, m.key(msg)
	}
	_, cmd := common.RouteToDialog(&m.dialog, msg, m.ctx.Keys, m.answer)
	return m, cmd
}

func (m *Model) key(msg tea.KeyMsg) tea.Cmd {
	m.syncList()
	if ok, cmd := m.list.Update(msg); ok {
		return cmd
	}
	if cmd, ok := m.actions().Handle(msg); ok {
		return cmd
	}
	if _, ok := m.ctx.Driver.(driver.Lifecycle); !ok && key.Matches(msg, m.ctx.Keys.Delete, m.ctx.Keys.Stop, m.ctx.Keys.Replace) {
		// not offered (not in the help); pressed, it says why nothing happens
		return common.Unsupported("deleting, stopping or replacing a sandbox")
	}
	return nil
}

// actions are the screen's own keys (after the list's): one table for dispatch and help. Delete,
// stop and replace are offered where the driver has them (driver.Lifecycle); stop and replace
// are the local bridge's.
func (m *Model) actions() components.KeyActions {
	k := m.ctx.Keys
	acts := components.KeyActions{
		components.Act(k.Open, func() tea.Cmd {
			if id := m.Selected(); id != "" {
				m.remember(id, "opened")
				return common.Send(common.OpenSandboxMsg{ID: id})
			}
			return nil
		}),
		components.Act(k.Create, func() tea.Cmd {
			m.dialog = common.NewForm("create", "Create a sandbox", []string{"Sandbox ID"}, nil,
				[]string{"empty for a random ID"})
			m.dialog.Text = "Name it (" + common.SandboxIDRule + "), or leave it empty for a random ID from the bridge. Its container starts on first use."
			m.dialog.Validate = checkID(true)
			return nil
		}),
		components.Act(k.Add, func() tea.Cmd {
			m.dialog = common.NewForm("add", "Add sandboxes by ID", []string{"Sandbox IDs"}, nil,
				[]string{common.SandboxIDRule})
			m.dialog.Text = "One ID, or several separated by spaces (a pasted list of lines works too)."
			m.dialog.Validate = checkIDs
			return nil
		}),
		components.Act(k.Forget, func() tea.Cmd {
			id := m.Selected()
			if id == "" {
				return nil
			}
			if r := m.find(id); r.listed {
				return common.Status(common.Warn, "sandbox "+id+" is listed by the local bridge; delete it (d) to remove it")
			}
			m.forget(id)
			return common.Status(common.Info, "forgot sandbox "+id+" (nothing was deleted on the bridge)")
		}),
	}
	_, lifecycle := m.ctx.Driver.(driver.Lifecycle)
	if lifecycle {
		acts = append(acts, components.Act(k.Delete, func() tea.Cmd {
			if id := m.Selected(); id != "" {
				m.dialog = common.NewConfirm("delete", "Delete sandbox?",
					"Delete sandbox "+id+"?\nIts container, processes and terminals are destroyed.")
				m.dialog.Data = id
			}
			return nil
		}))
	}
	acts = append(acts, components.Act(k.Refresh, m.refresh))
	if !lifecycle {
		return acts
	}
	return append(acts,
		components.Act(k.Stop, func() tea.Cmd {
			return m.confirmLocal("stop", "Stop sandbox?", "Every process and terminal is killed, as an idle sleep would.")
		}),
		components.Act(k.Replace, func() tea.Cmd {
			return m.confirmLocal("replace", "Replace container?", "A new incarnation starts; running processes are lost and old handles go stale.")
		}))
}

// confirmLocal asks before stopping the selected sandbox or replacing its container (the local
// bridge's actions: a remote bridge is told why not).
func (m *Model) confirmLocal(op, title, what string) tea.Cmd {
	id := m.Selected()
	if id == "" {
		return nil
	}
	if !m.ctx.Local {
		return common.Status(common.Warn, op+": only the local bridge can "+op+" a sandbox; a remote bridge does this by itself (idle sleep, redeploys)")
	}
	q := "Stop sandbox " + id + "?"
	if op == "replace" {
		q = "Replace the container of " + id + "?"
	}
	m.dialog = common.NewConfirm(op, title, q+"\n"+what)
	m.dialog.Data = id
	return nil
}

// checkIDs accepts an add form that names at least one sandbox ID; the others are reported when
// the form is submitted.
func checkIDs(v []string) error {
	ids, _, _ := client.ParseSandboxIDs(strings.NewReader(strings.Join(v, "\n")))
	if len(ids) == 0 {
		return errors.New(common.BadSandboxID(strings.Join(v, " ")))
	}
	return nil
}

// checkID is the one check of a sandbox ID typed into a form (create and add alike): the bridge's
// format, or, where empty is allowed, nothing at all.
func checkID(emptyOK bool) func([]string) error {
	return func(v []string) error {
		id := strings.TrimSpace(strings.Join(v, ""))
		if (id == "" && emptyOK) || client.ValidSandboxID(id) {
			return nil
		}
		return errors.New(common.BadSandboxID(strings.Join(v, "")))
	}
}

func (m *Model) mouse(msg tea.MouseMsg) tea.Cmd {
	if m.dialog != nil {
		return nil
	}
	switch {
	case msg.Button == tea.MouseButtonWheelUp:
		m.list.Move(-3)
	case msg.Button == tea.MouseButtonWheelDown:
		m.list.Move(3)
	case msg.Action == tea.MouseActionPress && msg.Button == tea.MouseButtonLeft:
		// rows start after the title and the table head
		m.list.ClickRow(msg.Y - 2)
	}
	return nil
}

func (m *Model) answer(res *common.DialogResult) tea.Cmd {
	if !res.OK {
		return nil
	}
	switch res.ID {
	case "create":
		id := strings.TrimSpace(strings.Join(res.Values, ""))
		switch {
		case id == "":
			m.busy = "creating a sandbox…"
			return m.action("create", "", func(ctx context.Context) (string, error) { return m.ctx.Driver.CreateSandbox(ctx) })
		case !client.ValidSandboxID(id):
			return common.Status(common.Error, "create: "+common.BadSandboxID(id))
		case m.find(id) != nil:
			m.selectID(id)
			return common.Status(common.Info, "sandbox "+id+" is already listed")
		}
		// a named sandbox needs no request: the bridge knows any well-formed ID, and its
		// container starts on first use
		return m.applyAction(actionMsg{op: "create", id: id})
	case "add":
		ids, bad, _ := client.ParseSandboxIDs(strings.NewReader(strings.Join(res.Values, "\n")))
		if len(ids) == 0 {
			return common.Status(common.Error, "add: "+common.BadSandboxID(strings.Join(res.Values, " ")))
		}
		for _, id := range ids {
			m.remember(id, "added")
			if m.ctx.Record != nil {
				m.ctx.Record.Remember(id, "dialog") // `ls` and other screens list it too
			}
		}
		m.selectID(ids[0])
		text := "added sandbox " + ids[0]
		if len(ids) > 1 {
			text = fmt.Sprintf("added %d sandboxes", len(ids))
		}
		level := common.Info
		if len(bad) > 0 {
			// the rest were added; say which were not, as typed (sanitised)
			level = common.Warn
			var words []string
			for _, b := range bad {
				words = append(words, common.SanitizeText(b.Text))
			}
			text += fmt.Sprintf("; not sandbox IDs (%s): %s", common.SandboxIDRule, strings.Join(words, ", "))
		}
		return tea.Batch(common.Status(level, text), m.refresh())
	case "delete", "stop", "replace":
		id, _ := res.Data.(string)
		m.busy = res.ID + " " + id + "…"
		br, ok := m.ctx.Driver.(driver.Lifecycle)
		if !ok {
			m.busy = ""
			return common.Unsupported(res.ID + " a sandbox")
		}
		return m.action(res.ID, id, func(ctx context.Context) (string, error) {
			switch res.ID {
			case "delete":
				return id, br.DeleteSandbox(ctx, id)
			case "stop":
				return id, br.StopSandbox(ctx, id)
			}
			return id, br.ReplaceSandbox(ctx, id)
		})
	}
	return nil
}

func (m *Model) selectID(id string) {
	m.syncList()
	m.list.Select(id)
}

func (m *Model) action(op, id string, f func(context.Context) (string, error)) tea.Cmd {
	base := m.ctx.BaseCtx()
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(base, common.CallTimeout)
		defer cancel()
		got, err := f(ctx)
		if got == "" {
			got = id
		}
		return actionMsg{op: op, id: got, err: err}
	}
}

// track has the record's background watcher watch every sandbox on the screen.
func (m *Model) track() {
	if m.ctx.Watch == nil {
		return
	}
	ids := make([]string, 0, len(m.rows))
	for _, r := range m.rows {
		ids = append(ids, r.ID)
	}
	m.ctx.Watch.Track(ids...)
}

func (m *Model) applyAction(msg actionMsg) tea.Cmd {
	m.busy = ""
	if rec := m.ctx.Record; rec != nil {
		out := "ok"
		if msg.err != nil {
			out = msg.err.Error()
		}
		rec.Add(record.Event{Time: m.ctx.Clock(), Sandbox: msg.id, Source: record.FromAction, Kind: msg.op,
			Action: &record.Action{Kind: msg.op, Outcome: out}})
	}
	if msg.op == "delete" && msg.err == nil && m.ctx.Watch != nil {
		m.ctx.Watch.Untrack(msg.id)
	}
	if msg.err != nil {
		return tea.Batch(common.Status(common.Error, common.Describe(msg.op+" "+msg.id, msg.err)), m.refresh())
	}
	switch msg.op {
	case "create":
		m.remember(msg.id, "created")
		m.selectID(msg.id)
		return tea.Batch(common.Status(common.Info, "created sandbox "+msg.id+" (a container starts on first use)"), m.refresh())
	case "delete":
		m.forget(msg.id)
		return tea.Batch(common.Status(common.Info, "deleted sandbox "+msg.id), m.refresh())
	case "stop":
		return tea.Batch(common.Status(common.Info, "stopped sandbox "+msg.id), m.refresh())
	case "replace":
		return tea.Batch(common.Status(common.Info, "replaced the container of "+msg.id+": a new incarnation"), m.refresh())
	}
	return m.refresh()
}

// refresh starts one poll of the bridge with non-waking lookups.
func (m *Model) refresh() tea.Cmd {
	m.gen++
	m.inflight = true
	gen := m.gen
	br := m.ctx.Driver
	// per-sandbox lookups only where the bridge has them and they start nothing
	statuses, _ := br.(driver.Statuses)
	if !br.Features().NonWakingLookups {
		statuses = nil
	}
	terms, _ := br.(driver.Terminals)
	lists := br.Features().SandboxList
	base := m.ctx.BaseCtx()
	now := m.ctx.Clock
	var ids []string
	for _, r := range m.rows {
		ids = append(ids, r.ID)
	}
	// With the record's background watcher running, it is the one source of each sandbox's
	// state: this screen reads what it observed instead of polling every sandbox itself.
	var rec *record.Record
	if m.ctx.Watch != nil {
		rec = m.ctx.Record
	}
	history := m.ctx.Record
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(base, common.CallTimeout)
		defer cancel()
		res := refreshMsg{owner: m, gen: gen, status: map[string]statusResult{}}
		if history != nil {
			// sandboxes with history are listed with their last known state, even on a bridge
			// that cannot list (a local read, no request)
			if known, err := history.KnownSandboxes(); err == nil {
				res.recorded = known
				have := map[string]bool{}
				for _, id := range ids {
					have[id] = true
				}
				for _, id := range known {
					if !have[id] && client.ValidSandboxID(id) {
						ids = append(ids, id)
					}
				}
			}
		}
		listed := map[string]bool{}
		// The list is an extension (sandscope's local bridge, or a Worker with the sandbox
		// registry) announced in the bridge's document; it wakes no sandbox.
		{
			infos, err := br.ListSandboxes(ctx)
			if err != nil {
				if isConnErr(err) {
					res.connErr = err
					res.at = now()
					return res
				}
			} else if lists {
				res.listOK = true
				for _, in := range infos {
					if client.ValidSandboxID(in.ID) { // server JSON: only well-formed IDs are shown
						res.listed = append(res.listed, in)
						listed[in.ID] = true
					}
				}
			}
		}
		for _, id := range ids {
			if listed[id] {
				continue
			}
			if rec != nil {
				if sr, ok := statusFromRecord(rec.State(id)); ok {
					res.status[id] = sr
				}
				continue
			}
			if statuses == nil {
				continue // nothing may be asked: the record's state (none yet) is all there is
			}
			var sr statusResult
			sr.running, sr.err = statuses.Running(ctx, id)
			if sr.err == nil {
				ps, perr := br.Runs(ctx, id)
				var ts []client.Terminal
				var terr error
				if terms != nil {
					ts, terr = terms.ListTerminals(ctx, id)
				}
				if perr == nil && terr == nil {
					sr.procs, sr.terms, sr.countsKnown = len(ps), len(ts), true
				}
			}
			if sr.err != nil && isConnErr(sr.err) {
				res.connErr = fmt.Errorf("sandbox %s: %w", id, sr.err)
				break
			}
			res.status[id] = sr
		}
		res.at = now()
		return res
	}
}

// isConnErr says whether err concerns the bridge as a whole rather than one sandbox.
func isConnErr(err error) bool {
	switch common.Classify(err) {
	case common.ErrUnreachable, common.ErrUnauthorized:
		return true
	}
	return false
}

func (m *Model) applyRefresh(msg refreshMsg) tea.Cmd {
	if msg.owner != m || msg.gen != m.gen {
		return nil
	}
	m.inflight = false
	m.loaded = true
	m.shownAt = msg.at
	m.addRecorded(msg.recorded) // known from the record, reachable or not
	if msg.connErr != nil {
		m.connErr = msg.connErr
		m.failures++
		wait := time.Duration(1<<min(m.failures-1, 5)) * time.Second
		if wait > 30*time.Second {
			wait = 30 * time.Second
		}
		m.retryAt = msg.at.Add(wait)
		gen := m.gen
		return tea.Batch(
			common.Send(common.ConnMsg{Err: msg.connErr, RetryAt: m.retryAt, Attempts: m.failures}),
			tea.Tick(wait, func(time.Time) tea.Msg { return tickMsg{owner: m, gen: gen} }),
		)
	}
	hadErr := m.connErr != nil
	m.connErr, m.failures, m.retryAt, m.lastOK = nil, 0, time.Time{}, msg.at
	defer m.track()
	if msg.listOK {
		seen := map[string]bool{}
		for _, in := range msg.listed {
			seen[in.ID] = true
			r := m.find(in.ID)
			if r == nil {
				added := in.CreatedAt
				if added.IsZero() {
					added = msg.at
				}
				r = &row{Known: Known{ID: in.ID, Source: "listed", AddedAt: added}}
				m.rows = append(m.rows, r)
			}
			run := in.Running
			r.listed, r.Running, r.LastSeen, r.err = true, &run, msg.at, nil
			r.procs, r.terms, r.countsKnown = in.Processes, in.Terminals, true
			if in.Incarnation > 0 {
				r.Incarnation, r.Inferred = in.Incarnation, false
			}
		}
		// listed rows that vanished from the list were deleted elsewhere
		kept := m.rows[:0]
		for _, r := range m.rows {
			if r.listed && !seen[r.ID] {
				if r.Source == "listed" {
					continue
				}
				r.listed = false
			}
			kept = append(kept, r)
		}
		m.rows = kept
		m.sortRows()
	}
	for id, sr := range msg.status {
		r := m.find(id)
		if r == nil {
			continue
		}
		if sr.err != nil {
			r.err = sr.err
			continue
		}
		r.err = nil
		run := sr.running.Running
		if sr.observed {
			r.Running = &run
			if !sr.at.IsZero() {
				r.LastSeen = sr.at
			}
			if sr.inc.Number > 0 {
				r.Incarnation, r.Inferred = sr.inc.Number, sr.inc.Inferred
			}
			r.procs, r.terms, r.countsKnown = sr.procs, sr.terms, sr.countsKnown
			continue
		}
		switch {
		case sr.running.Incarnation > 0:
			r.Incarnation, r.Inferred = sr.running.Incarnation, false
		case run && (r.Incarnation == 0 || r.sawStopped):
			// the real bridge reports no identity: a start after a stop is a new container
			r.Incarnation++
			r.Inferred = true
		}
		if !run && r.Running != nil && *r.Running {
			r.sawStopped = true
		} else if run {
			r.sawStopped = false
		}
		r.Running, r.LastSeen = &run, msg.at
		r.procs, r.terms, r.countsKnown = sr.procs, sr.terms, sr.countsKnown
	}
	m.syncList() // keep the cursor on its row
	gen := m.gen
	cmds := []tea.Cmd{tea.Tick(refreshEvery, func(time.Time) tea.Msg { return tickMsg{owner: m, gen: gen} }), m.persistLater()}
	if hadErr {
		cmds = append(cmds, common.Send(common.ConnMsg{}))
	}
	return tea.Batch(cmds...)
}

// addRecorded lists the sandboxes the record has history of that the screen does not show yet.
func (m *Model) addRecorded(ids []string) {
	added := false
	for _, id := range ids {
		if client.ValidSandboxID(id) && m.find(id) == nil {
			m.rows = append(m.rows, &row{Known: Known{ID: id, Source: "recorded", AddedAt: m.ctx.Clock()}})
			added = true
		}
	}
	if added {
		m.sortRows()
	}
}
