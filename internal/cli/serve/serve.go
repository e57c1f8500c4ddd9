package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"sandscope/internal/cli/cmdutil"
	"sandscope/localbridge"
)

// ServeOptions are the flags of `sandscope serve`.
type ServeOptions struct {
	IO cmdutil.IOStreams

	Listen         string
	Root           string // "": <state>/sandboxes (sandboxes-stable for the stable dialect)
	AllowRemote    bool
	IdleSleep      time.Duration
	Dialect        string
	FakeCompletion time.Duration // --stable-fake-completion

	// StateDir is where the token, the discovery file and the default root are (Complete).
	StateDir string
	// host is --listen's host (Validate).
	host string
}

// NewCmdServe is the serve command; runF, when not nil, is called with the checked options
// instead of Run. (serve needs nothing the Factory resolves: it is the bridge.)
func NewCmdServe(_ *cmdutil.Factory, runF func(*ServeOptions) error) *cobra.Command {
	o := &ServeOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the local bridge: sandboxes as directories, real processes and terminals",
		Long: `serve runs sandscope's local bridge, an implementation of the Cloudflare Sandbox bridge API
(1.0 preview) over local processes and PTYs. Each sandbox is a directory whose workspace/ plays
/workspace. It listens on 127.0.0.1 unless --allow-remote is given.

The token is $SANDBOX_API_KEY when set, else a random token kept in a file under the state
directory (created on first use, mode 0600). The token itself is never printed. Other sandscope
commands find the running server through <state>/serve.json.`,
		Example: `  # loopback, any free port; other sandscope commands find it through <state>/serve.json
  sandscope serve

  # a fixed port, sandboxes in a chosen directory, idle sleep after 10 minutes
  sandscope serve --listen 127.0.0.1:7681 --root ~/sandboxes --idle-sleep 10m

  # then, in another terminal
  sandscope ls`,
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
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen", "127.0.0.1:0", "address to listen on (port 0 = any free port; see the printed URL or <state>/serve.json)")
	f.StringVar(&o.Root, "root", "", "directory holding the sandboxes (default <state>/sandboxes)")
	f.BoolVar(&o.AllowRemote, "allow-remote", false, "allow listening on a non-loopback address")
	f.DurationVar(&o.IdleSleep, "idle-sleep", 0, "stop a sandbox after this long with nothing running (0 = never)")
	f.StringVar(&o.Dialect, "dialect", localbridge.DialectPreview, "bridge API to serve: v1-preview, or stable (the 0.12 API: exec, pty, session; every sandbox request allocates a container, and is counted)")
	f.DurationVar(&o.FakeCompletion, "stable-fake-completion", 0, "stable dialect: end /exec streams still open after this long with the exit-code-less completion {\"exit_code\":0} while the process runs on, as a 0.12 container can (0 = never; for testing clients)")
	return cmd
}

// Complete fills the defaults: the preview dialect, the state directory, the sandboxes' root.
func (o *ServeOptions) Complete(cmd *cobra.Command, _ []string) error {
	o.IO = cmdutil.StreamsOf(cmd)
	if o.Dialect == "" {
		o.Dialect = localbridge.DialectPreview
	}
	o.StateDir = localbridge.DefaultStateDir()
	if o.Root == "" {
		o.Root = localbridge.DefaultRoot(o.StateDir, o.Dialect)
	}
	return nil
}

// Validate refuses (exit 2) an unknown dialect, a fake completion without the stable dialect, a
// negative idle sleep, a --listen that is not host:port, and a non-loopback one without
// --allow-remote.
func (o *ServeOptions) Validate() error {
	if err := localbridge.CheckDialect(o.Dialect); err != nil {
		return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("serve: --dialect %w", err)}
	}
	if o.FakeCompletion != 0 && o.Dialect != localbridge.DialectStable {
		return &cmdutil.ExitError{Code: 2, Err: errors.New("serve: --stable-fake-completion needs --dialect stable")}
	}
	if o.IdleSleep < 0 {
		return &cmdutil.ExitError{Code: 2, Err: errors.New("serve: --idle-sleep must not be negative")}
	}
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("serve: --listen %q: %w", o.Listen, err)}
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); !o.AllowRemote && !(strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback()) {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("serve: --listen %s is not a loopback address: the bridge runs commands as you for anyone with the token, so it listens beyond this machine only with --allow-remote (or use 127.0.0.1:PORT)", o.Listen)}
	}
	o.host = host
	return nil
}

// Run serves until ctx ends or a signal (SIGINT, SIGTERM, SIGHUP) comes, then shuts down cleanly.
func (o *ServeOptions) Run(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	out, errOut := o.IO.Out, o.IO.ErrOut
	host, stateDir, root := o.host, o.StateDir, o.Root
	var err error
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return &cmdutil.ExitError{Code: 1, Err: fmt.Errorf("serve: state directory: %w", err)}
	}
	token := os.Getenv("SANDBOX_API_KEY")
	tokenWhere := "$SANDBOX_API_KEY"
	tokenFile := filepath.Join(stateDir, "token")
	if token == "" {
		if token, err = localbridge.LoadOrCreateToken(tokenFile); err != nil {
			return &cmdutil.ExitError{Code: 1, Err: fmt.Errorf("serve: %w", err)}
		}
		tokenWhere = tokenFile
	} else {
		tokenFile = ""
	}
	srv, err := localbridge.New(localbridge.Config{
		Root: root, Listen: o.Listen, Token: token, AllowNonLoopback: o.AllowRemote, IdleSleep: o.IdleSleep,
		Dialect: o.Dialect, StableFakeCompletionAfter: o.FakeCompletion,
		Logf: func(format string, args ...any) { fmt.Fprintf(errOut, "sandscope: "+format+"\n", args...) },
	})
	if err != nil {
		return &cmdutil.ExitError{Code: 1, Err: fmt.Errorf("serve: %w", err)}
	}
	ip := net.ParseIP(host)
	loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
	if !loopback && o.AllowRemote {
		fmt.Fprintf(errOut, "sandscope: WARNING: listening on %s, reachable from other machines; anyone with the token can run commands as you\n", o.Listen)
	}
	if err := srv.Start(); err != nil {
		return &cmdutil.ExitError{Code: 1, Err: fmt.Errorf("serve: %w", err)}
	}
	discovery := filepath.Join(stateDir, "serve.json")
	iso := srv.Isolation()
	d := localbridge.Discovery{URL: srv.URL(), TokenFile: tokenFile, PID: os.Getpid()}
	if !iso.Namespaces {
		d.NoIsolation = iso.Reason
	}
	if err := localbridge.WriteDiscovery(discovery, d); err != nil {
		fmt.Fprintf(errOut, "sandscope: %v\n", err)
	}

	fmt.Fprintf(out, "sandscope local bridge listening on %s\n", srv.URL())
	fmt.Fprintf(out, "sandboxes: %s\n", root)
	if o.Dialect == localbridge.DialectStable {
		fmt.Fprintf(out, "dialect: stable (0.12: exec, pty, session; every sandbox request allocates and is counted in GET /v1/sandbox)\n")
	}
	fmt.Fprintf(out, "token: %s\n", tokenWhere)
	fmt.Fprintf(out, "isolation: %s\n", iso)
	if tokenFile != "" {
		fmt.Fprintf(out, "try:   curl -H \"Authorization: Bearer $(cat %s)\" %s/v1/sandbox\n", shellQuote(tokenFile), srv.URL())
	} else {
		fmt.Fprintf(out, "try:   curl -H \"Authorization: Bearer $SANDBOX_API_KEY\" %s/v1/sandbox\n", srv.URL())
	}
	fmt.Fprintf(out, "stop with Ctrl-C\n")

	<-ctx.Done()
	fmt.Fprintf(errOut, "sandscope: shutting down: ending every process and terminal\n")
	cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	closeErr := srv.Close(cctx)
	// Remove the discovery file only if it is still ours.
	if d, err := localbridge.ReadDiscovery(discovery); err == nil && d.PID == os.Getpid() {
		_ = os.Remove(discovery)
	} else if errors.Is(err, localbridge.ErrStaleDiscovery) {
		_ = os.Remove(discovery)
	}
	if closeErr != nil {
		return &cmdutil.ExitError{Code: 1, Err: fmt.Errorf("serve: %w", closeErr)}
	}
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '/' || r == '.' || r == '_' || r == '-') {
			safe = false
			break
		}
	}
	if safe && s != "" {
		return s
	}
	out := "'"
	for _, r := range s {
		if r == '\'' {
			out += `'\''`
		} else {
			out += string(r)
		}
	}
	return out + "'"
}
