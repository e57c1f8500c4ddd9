package session

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"sandscope/client"
	"sandscope/driver"
	"sandscope/internal/cli/cmdutil"
	"sandscope/vocab"
)

func NewCmdSession(g *cmdutil.Factory) *cobra.Command {
	var cwd string
	var env []string
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
			verb, sandbox, id := args[0], args[1], ""
			if len(args) == 3 {
				id = args[2]
			}
			if err := cmdutil.CheckSandboxArg(sandbox); err != nil {
				return err
			}
			opts := client.SessionOptions{ID: id, Cwd: cwd}
			switch verb {
			case "create":
				for _, kv := range env {
					k, v, ok := strings.Cut(kv, "=")
					if !ok || k == "" {
						return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("--env %q: want NAME=VALUE", kv)}
					}
					if opts.Env == nil {
						opts.Env = map[string]string{}
					}
					opts.Env[k] = v
				}
			case "rm":
				if id == "" {
					return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: errors.New("usage: sandscope session rm SANDBOX ID")}
				}
			case "ls":
			default:
				return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("session %q: want create, ls or rm", verb)}
			}
			ctx := cmd.Context()
			cn, err := g.Connect(ctx, cmd, cmdutil.ConnectOptions{Op: "session", NoAnswerExit: cmdutil.ExitFailure})
			if err != nil {
				return err
			}
			defer cn.Close()
			sm, ok := cn.D.(driver.Sessions)
			if !ok {
				return cmdutil.Lacks("sessions", cmdutil.SessionsWhy)
			}
			switch verb {
			case "ls":
				// what sandscope recorded: asking the bridge would start the container
				ss, err := sm.Sessions(ctx, sandbox)
				if err != nil {
					return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: err}
				}
				fmt.Fprintln(cn.Out, "SESSION\tCREATED HERE\tLAST USED")
				for _, s := range ss {
					fmt.Fprintf(cn.Out, "%s\t%v\t%s\n", cmdutil.SafeText(s.ID), s.Created, cmdutil.Ago(s.Seen))
				}
				return nil
			case "create":
				cn.Wake(sandbox, "creating a session")
				got, err := sm.CreateSession(ctx, sandbox, opts)
				if err != nil {
					return cmdutil.BridgeExit("session create", err, cmdutil.ExitFailure)
				}
				fmt.Fprintln(cn.Out, vocab.Text(got))
				return nil
			}
			cn.Wake(sandbox, "deleting a session")
			if err := sm.DeleteSession(ctx, sandbox, id); err != nil {
				return cmdutil.BridgeExit("session rm", err, cmdutil.ExitFailure)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&cwd, "cwd", "", "create: the session's working directory")
	cmd.Flags().StringArrayVar(&env, "env", nil, "create: environment variable NAME=VALUE (repeatable)")
	return cmd
}
