// Package root builds sandscope's command line: the root command (the TUI) and one subcommand
// from each command package under internal/cli, all made from one cmdutil.Factory.
package root

import (
	"errors"
	"fmt"
	"os"
	"sandscope/internal/buildinfo"
	"sandscope/internal/cli/add"
	"sandscope/internal/cli/cmdutil"
	"sandscope/internal/cli/configcmd"
	"sandscope/internal/cli/democmd"
	"sandscope/internal/cli/exec"
	"sandscope/internal/cli/logs"
	"sandscope/internal/cli/ls"
	"sandscope/internal/cli/man"
	"sandscope/internal/cli/report"
	"sandscope/internal/cli/serve"
	"sandscope/internal/cli/session"
	"sandscope/internal/cli/shell"
	"sandscope/internal/cli/tui"
	"sandscope/internal/cli/wait"
	"sandscope/internal/cli/watch"
	"sandscope/sanitize"
	"strings"

	"github.com/spf13/cobra"
)

// NewCmd is the root command with its subcommands, made from f.
func NewCmd(f *cmdutil.Factory) *cobra.Command { return newRootCmd(f) }

func newRootCmd(g *cmdutil.Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "sandscope",
		Short: "Watch and steer Cloudflare Sandboxes: processes, logs, terminals, incarnations",
		Long: `sandscope shows what happened in your sandboxes: live logs with resume cursors, terminals,
container replacements, stale handles and interrupted streams, never hidden.

With no subcommand it opens the terminal UI, on a remote bridge when one is configured
(--url, SANDSCOPE_URL or a config context), else on an embedded local bridge.`,
		// --version prints "sandscope version " and this: the version, then the commit, date and
		// toolchain on lines of their own. (Not a SetVersionTemplate: a template links text/template,
		// which stops the linker dropping unused methods and makes the binary 4 MB larger.)
		Version:       buildinfo.Get().Long(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return tui.RunTUI(cmd, g)
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.URL, "url", "", "bridge URL (default: $SANDSCOPE_URL, the config's context, or a local bridge)")
	pf.StringVar(&g.TokenFile, "token-file", "", "read the bridge token from this file (default: $SANDBOX_API_KEY)")
	pf.StringVar(&g.Context, "context", "", "use this context from the config file")
	tui.RegisterTUIFlags(root)
	root.AddCommand(
		serve.NewCmdServe(g, nil),
		ls.NewCmdLs(g, nil),
		add.NewCmdAdd(g, nil),
		logs.NewCmdLogs(g, nil),
		wait.NewCmdWait(g, nil),
		exec.NewCmdExec(g, nil),
		shell.NewCmdShell(g, nil),
		shell.NewCmdAttach(g, nil),
		session.NewCmdSession(g, nil),
		configcmd.NewCmdConfig(g, nil),
		democmd.NewCmdDemo(g, nil),
		report.NewCmdReport(g, nil),
		watch.NewCmdWatch(g, nil),
		man.NewCmdMan(g, nil),
	)
	for _, c := range root.Commands() {
		checkArgsFirst(c, sandboxFirst[c.Name()])
	}
	// "sandscope record --help" is not the root's help: an unknown command says so (exit 2)
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c == root {
			if rest := root.Flags().Args(); len(rest) > 0 {
				fmt.Fprintf(c.ErrOrStderr(), "sandscope: %s\n", unknownCommand(root, rest[0]))
				exit(cmdutil.ExitUsage)
			}
		}
		help(c, args)
	})
	root.Args = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: errors.New(unknownCommand(root, args[0]))}
		}
		return nil
	}
	return root
}

// sandboxFirst names the commands whose first argument is a SANDBOX.
var sandboxFirst = map[string]bool{"attach": true, "exec": true, "logs": true, "ls": true, "report": true, "shell": true, "wait": true}

// checkArgsFirst makes a command's arguments the first thing checked: a wrong count says the
// usage and an example (not only cobra's count), and a SANDBOX first argument with a bad ID is
// refused before any bridge is looked for, so the error is about what the user typed.
func checkArgsFirst(cmd *cobra.Command, sandbox bool) {
	inner := cmd.Args
	cmd.Args = func(c *cobra.Command, args []string) error {
		if inner != nil {
			if err := inner(c, args); err != nil {
				msg := fmt.Sprintf("%s: %v; usage: %s", c.Name(), err, c.UseLine())
				if ex := firstExample(c.Name(), c.Example); ex != "" {
					msg += "; e.g. " + ex
				}
				return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: errors.New(msg)}
			}
		}
		if sandbox && len(args) > 0 {
			return cmdutil.CheckSandboxArg(args[0])
		}
		return nil
	}
}

// firstExample is the first line of a command's examples that runs it ("sandscope NAME …"), else
// the first command line.
func firstExample(name, ex string) string {
	first := ""
	for _, l := range strings.Split(ex, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "sandscope "+name+" ") {
			return l
		}
		if first == "" && l != "" && !strings.HasPrefix(l, "#") {
			first = l
		}
	}
	return first
}

// Main runs the command line and exits with its status.
func Main() {
	g := &cmdutil.Factory{}
	root := newRootCmd(g)
	err := root.Execute()
	if err == nil {
		return
	}
	var ee *cmdutil.ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			printError(ee.Err)
		}
		os.Exit(ee.Code)
	}
	printError(err)
	os.Exit(2)
}

// printError writes err to stderr, sanitized: joined errors (every problem of a configuration
// file) one to a line.
func printError(err error) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts := j.Unwrap()
		msgs := make([]string, len(parts))
		for i, e := range parts {
			msgs[i] = e.Error()
		}
		if strings.Join(msgs, "\n") == err.Error() { // errors.Join, not a message wrapping several
			for _, e := range parts {
				printError(e)
			}
			return
		}
	}
	fmt.Fprintf(os.Stderr, "sandscope: %s\n", sanitize.Message(err.Error()))
}

// exit ends the process (a variable: tests of the help path replace it).
var exit = os.Exit

// unknownCommand says name is not a command, with the closest ones cobra suggests and the list.
func unknownCommand(root *cobra.Command, name string) string {
	msg := fmt.Sprintf("unknown command %q", name)
	if root.SuggestionsMinimumDistance <= 0 {
		root.SuggestionsMinimumDistance = 2
	}
	if s := root.SuggestionsFor(name); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	var names []string
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return msg + "; commands: " + strings.Join(names, ", ") + " (sandscope --help)"
}
