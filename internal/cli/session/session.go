package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/internal/cli/cmdutil"
	"sandscope/vocab"
)

// SessionOptions are session's verb, arguments and flags, and what it gets from the Factory.
type SessionOptions struct {
	Factory *cmdutil.Factory
	IO      cmdutil.IOStreams

	Verb    string // create, ls or rm
	Sandbox string
	ID      string // the session; create without it lets the bridge pick
	Cwd     string
	Env     []string // NAME=VALUE, as given

	// Session is what create asks for, made by Validate.
	Session client.SessionOptions
}

// NewCmdSession is the session command; runF, when not nil, is called with the checked options
// instead of Run.
func NewCmdSession(f *cmdutil.Factory, runF func(*SessionOptions) error) *cobra.Command {
	o := &SessionOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "session create|ls|rm SANDBOX [ID]",
		Short: "Bridges with sessions (stable): create, list (those created or used here) and delete sessions",
		Long: `Sessions exist on stable (0.12) bridges: a session keeps its working directory and environment
between exec calls, and has its own shell. "create" makes one (the bridge picks session-<ms> without
ID), "rm" deletes it, "ls" lists the sessions created or used here (the bridge has no list, and
asking it would start the container). Use one with "exec --session ID" and "shell --session ID",
or attach to its shell with "attach SANDBOX ID".

create and rm start the sandbox's container when it is not running. Sessions die with their
container. Exit status: 0 done; 2 usage or refused (e.g. an existing ID); 1 bridge failure.`,
		Example: `  sandscope session create myapp dev --cwd /workspace/app --env NODE_ENV=test
  sandscope exec --session dev myapp -- npm test
  sandscope shell --session dev myapp
  sandscope session ls myapp
  sandscope session rm myapp dev`,
		Args: cobra.RangeArgs(2, 3),
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
	cmd.Flags().StringVar(&o.Cwd, "cwd", "", "create: the session's working directory")
	cmd.Flags().StringArrayVar(&o.Env, "env", nil, "create: environment variable NAME=VALUE (repeatable)")
	return cmd
}

// Complete takes the verb, sandbox and session ID from args and the streams from cmd.
func (o *SessionOptions) Complete(cmd *cobra.Command, args []string) error {
	o.IO = cmdutil.StreamsOf(cmd)
	o.Verb, o.Sandbox, o.ID = "", "", ""
	if len(args) >= 2 {
		o.Verb, o.Sandbox = args[0], args[1]
	}
	if len(args) == 3 {
		o.ID = args[2]
	}
	return nil
}

// Validate refuses (exit 2) a bad sandbox ID, an --env without NAME=, rm without an ID and an
// unknown verb.
func (o *SessionOptions) Validate() error {
	if err := cmdutil.CheckSandboxArg(o.Sandbox); err != nil {
		return err
	}
	o.Session = client.SessionOptions{ID: o.ID, Cwd: o.Cwd}
	switch o.Verb {
	case "create":
		for _, kv := range o.Env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("--env %q: want NAME=VALUE", kv)}
			}
			if o.Session.Env == nil {
				o.Session.Env = map[string]string{}
			}
			o.Session.Env[k] = v
		}
	case "rm":
		if o.ID == "" {
			return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: errors.New("usage: sandscope session rm SANDBOX ID")}
		}
	case "ls":
	default:
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("session %q: want create, ls or rm", o.Verb)}
	}
	return nil
}

// Run creates, lists or deletes through the driver's sessions.
func (o *SessionOptions) Run(ctx context.Context) error {
	cn, err := o.Factory.ConnectIO(ctx, o.IO, cmdutil.ConnectOptions{Op: "session", NoAnswerExit: cmdutil.ExitFailure})
	if err != nil {
		return err
	}
	defer cn.Close()
	sm, ok := cn.D.(driver.Sessions)
	if !ok {
		return cmdutil.Lacks("sessions", cmdutil.SessionsWhy)
	}
	switch o.Verb {
	case "ls":
		// what sandscope recorded: asking the bridge would start the container
		ss, err := sm.Sessions(ctx, o.Sandbox)
		if err != nil {
			return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: err}
		}
		fmt.Fprintln(cn.Out, "SESSION\tCREATED HERE\tLAST USED")
		for _, s := range ss {
			fmt.Fprintf(cn.Out, "%s\t%v\t%s\n", cmdutil.SafeText(s.ID), s.Created, cmdutil.Ago(s.Seen))
		}
		return nil
	case "create":
		cn.Wake(o.Sandbox, "creating a session")
		got, err := sm.CreateSession(ctx, o.Sandbox, o.Session)
		if err != nil {
			return cmdutil.BridgeExit("session create", err, cmdutil.ExitFailure)
		}
		fmt.Fprintln(cn.Out, vocab.Text(got))
		return nil
	}
	cn.Wake(o.Sandbox, "deleting a session")
	if err := sm.DeleteSession(ctx, o.Sandbox, o.ID); err != nil {
		return cmdutil.BridgeExit("session rm", err, cmdutil.ExitFailure)
	}
	return nil
}
