package democmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"sandscope/client"
	"sandscope/demo"
	"sandscope/driver"
	"sandscope/internal/cli/cmdutil"
)

// DemoOptions are demo's flags, and what it gets from the Factory.
type DemoOptions struct {
	Factory *cmdutil.Factory
	IO      cmdutil.IOStreams

	// Scene is the scene's options as the flags set them; Run adds the agent's executable and
	// the log.
	Scene demo.Options
	// ShAgent runs the agent as a sh script even on a local bridge (--sh-agent).
	ShAgent bool
}

// NewCmdDemo is the demo command (and its hidden agent); runF, when not nil, is called with the
// checked options instead of Run.
func NewCmdDemo(f *cmdutil.Factory, runF func(*DemoOptions) error) *cobra.Command {
	o := &DemoOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Fill a bridge with a demo scene: an agent, a build, a failed test, a shell, a container replacement",
		Long: `Fill sandbox "demo" on the bridge with a scene like real work: a coding agent streaming
JSONL, a build writing to stdout and stderr, a test run that fails with exit 2 and a shell terminal.
After --replace-after the container is replaced (local bridge only), so the timeline shows two
incarnations and a LOST agent, and the agent is relaunched in the new container.

It uses the same bridge as the other commands: --url, --context or SANDSCOPE_URL, else the local
bridge a running 'sandscope serve' announced. Then open the TUI on the same bridge (the command
it prints when the scene is ready); plain 'sandscope' starts its own embedded bridge, where
'sandscope --demo' plays the same scene.`,
		Example: `  # in one terminal a local bridge; in another the scene, then the TUI on the same bridge
  sandscope serve --listen 127.0.0.1:7681
  sandscope demo && sandscope --url http://127.0.0.1:7681 --token-file ~/.local/state/sandscope/token

  # faster, into another sandbox, without the container replacement
  sandscope demo --speed 4 --sandbox demo2 --no-replace

  # the TUI's first run on its embedded bridge offers the same scene`,
		Args: cobra.NoArgs,
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
	fl := cmd.Flags()
	fl.StringVar(&o.Scene.Sandbox, "sandbox", demo.DefaultSandbox, "sandbox to fill")
	fl.Float64Var(&o.Scene.Speed, "speed", 1, "pace multiplier (2 = twice as fast)")
	fl.DurationVar(&o.Scene.ReplaceAfter, "replace-after", 25*time.Second, "replace the container this long after the start (divided by --speed)")
	fl.BoolVar(&o.Scene.NoReplace, "no-replace", false, "do not replace the container")
	fl.BoolVar(&o.ShAgent, "sh-agent", false, "run the agent as a sh script even on a local bridge")
	cmd.AddCommand(NewCmdDemoAgent(nil))
	return cmd
}

// Complete takes the streams from cmd.
func (o *DemoOptions) Complete(cmd *cobra.Command, _ []string) error {
	o.IO = cmdutil.StreamsOf(cmd)
	return nil
}

// Validate has nothing to refuse: the scene takes any pace, and the bridge decides what it can
// play (Run).
func (o *DemoOptions) Validate() error { return nil }

// Run plays the scene on the Factory's bridge until it is ready, or a signal ends it.
func (o *DemoOptions) Run(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cn, err := o.Factory.ConnectIO(ctx, o.IO, cmdutil.ConnectOptions{Op: "demo", NoAnswerExit: cmdutil.ExitFailure})
	if err != nil {
		return err
	}
	defer cn.Close()
	errOut := o.IO.ErrOut
	fmt.Fprintf(errOut, "sandscope: demo: bridge %s (%s)\n", cn.D.BaseURL(), cn.Target.Source)
	tm, ok := cn.D.(driver.Terminals)
	if !ok {
		return cmdutil.Lacks("terminals", "the demo scene opens shell terminals beside its processes")
	}
	opts := o.Scene
	// The local bridge runs real local processes, so it can run this very binary as the agent; a
	// real container cannot.
	if cn.D.Capabilities().Local && !o.ShAgent {
		if exe, err := os.Executable(); err == nil {
			opts.Executable = exe
		}
	}
	opts.Log = func(format string, args ...any) {
		fmt.Fprintf(errOut, "sandscope: demo: "+format+"\n", args...)
	}
	if err := demo.Run(ctx, demoBridge{d: cn.D, t: tm}, opts); err != nil {
		return err
	}
	fmt.Fprintf(errOut, "sandscope: demo: scene ready in sandbox %q; open it in the TUI on the same bridge: %s\n",
		sandboxName(opts.Sandbox), tuiHint(o.Factory, cn.Target))
	return nil
}

// demoBridge is the scene's bridge over the driver: runs through the core, terminals through
// driver.Terminals, the container replacement through driver.Lifecycle where the driver has it.
type demoBridge struct {
	d driver.Driver
	t driver.Terminals
}

func (b demoBridge) StartProcess(ctx context.Context, sandbox string, req client.ExecRequest) (client.Process, error) {
	return b.d.Start(ctx, sandbox, driver.StartRequest{ExecRequest: req})
}

func (b demoBridge) GetProcess(ctx context.Context, sandbox, process string) (client.Process, error) {
	return b.d.Run(ctx, sandbox, process)
}

func (b demoBridge) CreateTerminal(ctx context.Context, sandbox string, req client.TerminalRequest) (client.Terminal, error) {
	return b.t.CreateTerminal(ctx, sandbox, req)
}

// ReplaceSandbox is client.ErrUnsupported on a driver without driver.Lifecycle: the scene then
// goes without the replacement, as on a bridge that cannot replace containers.
func (b demoBridge) ReplaceSandbox(ctx context.Context, sandbox string) error {
	if l, ok := b.d.(driver.Lifecycle); ok {
		return l.ReplaceSandbox(ctx, sandbox)
	}
	return client.ErrUnsupported
}

func sandboxName(s string) string {
	if s == "" {
		return demo.DefaultSandbox
	}
	return s
}

// DemoAgentOptions are the demo agent's flags.
type DemoAgentOptions struct {
	IO      cmdutil.IOStreams
	Speed   float64
	Resumed bool // the run relaunched after the container was replaced
}

// NewCmdDemoAgent is the demo's agent: Claude-Code-like stream-json on stdout with pacing. Hidden:
// it exists for the demo scene, which runs it inside the local bridge. runF, when not nil, is
// called instead of Run.
func NewCmdDemoAgent(runF func(*DemoAgentOptions) error) *cobra.Command {
	o := &DemoAgentOptions{}
	cmd := &cobra.Command{
		Use:    "agent",
		Short:  "Print the demo agent's JSONL stream with its pacing",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.IO = cmdutil.StreamsOf(cmd)
			if runF != nil {
				return runF(o)
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().Float64Var(&o.Speed, "speed", 1, "pace multiplier")
	cmd.Flags().BoolVar(&o.Resumed, "resume", false, "the run relaunched after the container was replaced")
	return cmd
}

// Run writes the agent's stream. Signals keep their default effect: a killed agent must end as
// killed (128+n).
func (o *DemoAgentOptions) Run(ctx context.Context) error {
	return demo.WriteAgent(ctx, o.IO.Out, o.Speed, o.Resumed)
}

// tuiHint is the command that opens the TUI on the bridge a command used. It names the token's file
// or variable, never the token.
func tuiHint(g *cmdutil.Factory, t cmdutil.BridgeTarget) string {
	switch {
	case g.Context != "":
		return "sandscope --context " + g.Context
	case g.TokenFile != "":
		return "sandscope --url " + t.URL + " --token-file " + g.TokenFile
	case t.TokenFile != "":
		return "sandscope --url " + t.URL + " --token-file " + t.TokenFile
	default:
		return "sandscope --url " + t.URL + " (token from SANDBOX_API_KEY or --token-file)"
	}
}
