package ls

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/internal/cli/cmdutil"
	"sandscope/record"
	"sandscope/vocab"
)

// LsOptions are ls' flags and argument, and what it gets from the Factory.
type LsOptions struct {
	Factory *cmdutil.Factory
	IO      cmdutil.IOStreams

	Sandbox string // "": list the sandboxes
	JSON    bool
}

// NewCmdLs is the ls command; runF, when not nil, is called with the checked options instead of
// Run.
func NewCmdLs(f *cmdutil.Factory, runF func(*LsOptions) error) *cobra.Command {
	o := &LsOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "ls [SANDBOX]",
		Short: "List sandboxes, or a sandbox's processes and terminals",
		Long: `Without SANDBOX, list the bridge's sandboxes (the local bridge can; a remote bridge cannot
enumerate them). With SANDBOX, list its processes and terminals. These lookups never wake or start
a container.`,
		Example: `  sandscope ls                  # sandboxes (a local bridge lists them; a remote one cannot)
  sandscope ls myapp       # its processes and terminals
  sandscope ls --json myapp | jq -r '.processes[] | select(.state == "running") | .id'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(cmd, args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON instead of a table")
	return cmd
}

// Complete takes the sandbox, if any, from args and the streams from cmd.
func (o *LsOptions) Complete(cmd *cobra.Command, args []string) error {
	o.IO = cmdutil.StreamsOf(cmd)
	o.Sandbox = ""
	if len(args) > 0 {
		o.Sandbox = args[0]
	}
	return nil
}

// Validate refuses a SANDBOX that is not a sandbox ID (exit 2).
func (o *LsOptions) Validate() error {
	if o.Sandbox == "" {
		return nil
	}
	return cmdutil.CheckSandboxArg(o.Sandbox)
}

// Run lists the sandboxes, or the sandbox's processes, terminals and sessions.
func (o *LsOptions) Run(ctx context.Context) error {
	cn, err := o.Factory.ConnectIO(ctx, o.IO, cmdutil.ConnectOptions{Op: "ls", NoAnswerExit: cmdutil.ExitFailure})
	if err != nil {
		return err
	}
	defer cn.Close()
	if o.Sandbox == "" {
		return runLsSandboxes(ctx, cn.D, recordedSandboxes(ctx, o.Factory, cn.Rec), o.JSON, cn.Out, cn.ErrOut)
	}
	rec := cn.Recorder(false) // what ls saw is history too
	defer rec.Close()
	return runLsSandbox(ctx, cn.D, rec, o.Sandbox, o.JSON, cn.Out)
}

// lsExit maps a bridge error to an exit status: 2 for usage/auth/not-found, 1 otherwise.
func lsExit(err error) error { return cmdutil.BridgeExit("", err, cmdutil.ExitFailure) }

// lsSandbox is one row of `ls`: the bridge's list entry, or what the record last knew of a sandbox
// the bridge does not list (a bridge that cannot list, or a sandbox it no longer has).
type lsSandbox struct {
	client.SandboxInfo
	// Known says where the row comes from: "listed" by the bridge, "recorded" (history in the
	// record; its state is the last known one, as of LastSeen), or "added" (added by its ID,
	// nothing observed yet)
	Known    string     `json:"known"`
	LastSeen *time.Time `json:"lastSeen,omitempty"`
}

func runLsSandboxes(ctx context.Context, d driver.Driver, recorded []lsSandbox, asJSON bool, w, stderr io.Writer) error {
	list, err := d.ListSandboxes(ctx)
	cannotList := errors.Is(err, client.ErrUnsupported)
	if err != nil && !cannotList {
		return lsExit(err)
	}
	if cannotList && len(recorded) == 0 {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("this bridge cannot list sandboxes (only the local bridge can), and sandscope has no history of any here; name one: sandscope ls SANDBOX")}
	}
	rows := make([]lsSandbox, 0, len(list)+len(recorded))
	listed := map[string]bool{}
	for _, s := range list {
		listed[s.ID] = true
		rows = append(rows, lsSandbox{SandboxInfo: s, Known: "listed"})
	}
	for _, r := range recorded {
		if !listed[r.ID] {
			rows = append(rows, r)
		}
	}
	if cannotList {
		fmt.Fprintln(stderr, "sandscope: this bridge cannot list sandboxes: these are the ones sandscope has history of, with their last known state (sandscope report SANDBOX tells more)")
	}
	if asJSON {
		return cmdutil.WriteJSON(w, rows)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SANDBOX\tSTATE\tPROCESSES\tTERMINALS\tLAST ACTIVE")
	for _, s := range rows {
		state := vocab.Sandbox(s.Running, s.Incarnation)
		last := cmdutil.Ago(s.LastActiveAt)
		switch s.Known {
		case "added":
			state, last = vocab.Unknown+" (added, not seen yet)", "-"
		case "recorded":
			state = "last known: " + state
			last = "-"
			if s.LastSeen != nil {
				last = "seen " + cmdutil.Ago(*s.LastSeen)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", cmdutil.SafeText(s.ID), state, s.Processes, s.Terminals, last)
	}
	return tw.Flush()
}

// recordedSandboxes is what the record knows of every sandbox with history on this bridge (none
// when there is no record yet). open is the record the command already holds (its driver's), else
// nil: the record is then opened read-only for this.
func recordedSandboxes(ctx context.Context, g *cmdutil.Factory, open *record.Record) []lsSandbox {
	rec := open
	if rec == nil {
		n, err := cmdutil.ReaderRecordName(ctx, g)
		if err != nil || !record.Exists(cmdutil.RecordDir(), n.Identity, n.Legacy) {
			return nil
		}
		if rec, err = record.Open(record.Options{Dir: cmdutil.RecordDir(), Bridge: n.Identity, Legacy: n.Legacy, Version: cmdutil.Version, ReadOnly: true}); err != nil {
			return nil
		}
		defer rec.Close()
	} else {
		_ = rec.Flush() // what the driver queued counts
	}
	ids, err := rec.KnownSandboxes()
	if err != nil {
		return nil
	}
	out := make([]lsSandbox, 0, len(ids))
	for _, id := range ids {
		if cmdutil.CheckSandboxArg(id) != nil {
			continue // only well-formed IDs reach the screen
		}
		st := rec.State(id)
		r := lsSandbox{SandboxInfo: client.SandboxInfo{ID: id, Incarnation: st.Current.Number}, Known: "recorded"}
		if st.Running == nil && st.Events == 0 && len(st.Processes) == 0 && len(st.Terminals) == 0 {
			r.Known = "added" // added by its ID (sandscope add), nothing observed of it yet
		}
		r.Running = st.Running != nil && *st.Running
		for _, e := range st.Processes {
			if !e.Gone && !e.Lost && !st.Stale(e.Incarnation) && e.Process.State == "running" {
				r.Processes++
			}
		}
		for _, e := range st.Terminals {
			if !e.Gone && !e.Lost && !st.Stale(e.Incarnation) && e.Terminal.Status == "running" {
				r.Terminals++
			}
		}
		seen := st.LastOK
		for _, list := range [][]*record.Entry{st.Processes, st.Terminals} {
			for _, e := range list {
				if e.LastSeen.After(seen) {
					seen = e.LastSeen
				}
			}
		}
		if !seen.IsZero() {
			r.LastSeen = &seen
		}
		out = append(out, r)
	}
	return out
}

// SandboxListing is `ls SANDBOX --json`. Running is absent when the bridge was not asked (a
// driver without a status lookup that starts nothing); Sessions are listed where the bridge has
// them.
type SandboxListing struct {
	Sandbox     string            `json:"sandbox"`
	Running     *bool             `json:"running,omitempty"`
	Incarnation int               `json:"incarnation,omitempty"`
	Processes   []client.Process  `json:"processes"`
	Terminals   []client.Terminal `json:"terminals"`
	Sessions    []driver.Session  `json:"sessions,omitempty"`
}

// runLsSandbox lists a sandbox's runs, terminals and sessions as far as the driver offers them,
// with lookups that start nothing: a driver without driver.Statuses is not asked whether the
// sandbox runs, and its runs and sessions come from what it keeps.
func runLsSandbox(ctx context.Context, d driver.Driver, rec *cmdutil.CommandRecord, sandbox string, asJSON bool, w io.Writer) error {
	if err := cmdutil.CheckSandboxArg(sandbox); err != nil {
		return err
	}
	var rs client.RunningStatus
	statuses, hasStatus := d.(driver.Statuses)
	if hasStatus {
		var err error
		if rs, err = statuses.Running(ctx, sandbox); err != nil {
			return lsExit(err)
		}
	}
	ps, err := d.Runs(ctx, sandbox)
	if err != nil {
		return lsExit(err)
	}
	ts := []client.Terminal{}
	if tm, ok := d.(driver.Terminals); ok {
		if ts, err = tm.ListTerminals(ctx, sandbox); err != nil {
			return lsExit(err)
		}
	}
	var ss []driver.Session
	if sm, ok := d.(driver.Sessions); ok {
		if ss, err = sm.Sessions(ctx, sandbox); err != nil {
			return lsExit(err)
		}
	}
	empty := !rs.Running && rs.Incarnation == 0 && len(ps) == 0 && len(ts) == 0 && len(ss) == 0
	if empty && hasStatus && !everSeen(ctx, d, sandbox) {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("sandbox %s: never seen by this bridge (no container, process or terminal)", sandbox)}
	}
	if hasStatus {
		rec.Lookup(record.LookupRunning(sandbox, rs, ""))
	}
	for _, p := range ps {
		rec.Lookup(record.LookupProcess(sandbox, p))
	}
	for _, t := range ts {
		rec.Lookup(record.LookupTerminal(sandbox, t))
	}
	if asJSON {
		l := SandboxListing{Sandbox: sandbox, Incarnation: rs.Incarnation, Processes: ps, Terminals: ts, Sessions: ss}
		if hasStatus {
			l.Running = &rs.Running
		}
		if l.Processes == nil {
			l.Processes = []client.Process{}
		}
		return cmdutil.WriteJSON(w, l)
	}
	state := vocab.Sandbox(rs.Running, rs.Incarnation)
	switch {
	case !hasStatus:
		state = "not asked (on this bridge a lookup starts the sandbox's container): the runs sandscope started here"
	case empty:
		state += " · nothing here: no process or terminal (this bridge cannot tell a sandbox never used from one stopped with nothing left)"
	}
	fmt.Fprintf(w, "sandbox %s: %s\n", sandbox, state)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tID\tSTATE\tPID\tSTARTED\tCOMMAND")
	for _, p := range ps {
		fmt.Fprintf(tw, "process\t%s\t%s\t%d\t%s\t%s\n", cmdutil.SafeText(p.ID), cmdutil.ProcessState(p), p.PID, cmdutil.Ago(p.StartedAt), cmdutil.CommandLine(p.Command))
	}
	for _, t := range ts {
		fmt.Fprintf(tw, "terminal\t%s\t%s\t%d\t-\t%s\n", cmdutil.SafeText(t.ID), cmdutil.TerminalState(t), t.PID, cmdutil.CommandLine(t.Command))
	}
	for _, s := range ss {
		fmt.Fprintf(tw, "session\t%s\t%s\t-\t%s\t-\n", cmdutil.SafeText(s.ID), sessionWord(s), cmdutil.Ago(s.Seen))
	}
	return tw.Flush()
}

// sessionWord says whether sandscope created a session or only used it.
func sessionWord(s driver.Session) string {
	if s.Created {
		return "CREATED HERE"
	}
	return "USED HERE"
}

// everSeen reports whether the bridge knows sandbox: true unless a bridge that lists its sandboxes
// (the local one) does not list it. A bridge that cannot list gets the benefit of the doubt.
func everSeen(ctx context.Context, d driver.Driver, sandbox string) bool {
	list, err := d.ListSandboxes(ctx)
	if err != nil {
		return true
	}
	for _, s := range list {
		if s.ID == sandbox {
			return true
		}
	}
	return false
}
