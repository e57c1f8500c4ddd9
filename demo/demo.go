package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sandscope/client"
)

// Bridge is what the scene needs from a bridge client; *client.Client satisfies it.
type Bridge interface {
	StartProcess(ctx context.Context, sandbox string, req client.ExecRequest) (client.Process, error)
	GetProcess(ctx context.Context, sandbox, process string) (client.Process, error)
	CreateTerminal(ctx context.Context, sandbox string, req client.TerminalRequest) (client.Terminal, error)
	ReplaceSandbox(ctx context.Context, sandbox string) error
}

// DefaultSandbox is the sandbox the scene fills.
const DefaultSandbox = "demo"

// Options tunes the scene. Zero values mean the defaults.
type Options struct {
	Sandbox string // default "demo"
	// Executable, when set, is a sandscope binary the bridge can run (true for the local bridge,
	// which runs real local processes): the agent is then `<Executable> demo agent`. Otherwise the
	// agent is a sh script, so the scene also works in a real container.
	Executable string
	// Speed divides every pause (2 = twice as fast). Default 1.
	Speed float64
	// ReplaceAfter is when, counted from the start, the container is replaced. Default 25s (at speed
	// 1; it is divided by Speed like every other pause).
	ReplaceAfter time.Duration
	// NoReplace skips the replacement and the relaunch.
	NoReplace bool
	// Log receives one line per step (what was started, with its ID). Optional.
	Log func(format string, args ...any)
}

// Scene is what Run started, for callers that want to open something in it.
type Scene struct {
	Sandbox   string
	Build     client.Process
	Tests     client.Process
	Agent     client.Process
	Terminal  client.Terminal
	Replaced  bool
	Agent2    client.Process  // the agent relaunched in the new container
	Terminal2 client.Terminal // a shell in the new container
}

// Run builds the scene and returns once the replacement and the relaunch are done (about
// ReplaceAfter), leaving the processes running in the bridge. A bridge without the replace
// extension (a real Cloudflare bridge) gets the scene without the replacement: that is logged, not
// an error.
func Run(ctx context.Context, b Bridge, opts Options) error {
	_, err := RunScene(ctx, b, opts)
	return err
}

// RunScene is Run, also returning what it started.
func RunScene(ctx context.Context, b Bridge, opts Options) (*Scene, error) {
	if b == nil {
		return nil, errors.New("demo: no bridge client")
	}
	if opts.Sandbox == "" {
		opts.Sandbox = DefaultSandbox
	}
	if opts.Speed <= 0 {
		opts.Speed = 1
	}
	if opts.ReplaceAfter <= 0 {
		opts.ReplaceAfter = 25 * time.Second
	}
	logf := opts.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	sb := opts.Sandbox
	sc := &Scene{Sandbox: sb}
	start := time.Now()

	var err error
	if sc.Build, err = b.StartProcess(ctx, sb, client.ExecRequest{
		Argv: []string{"sh", "-c", BuildScript(opts.Speed), "build"},
		Env:  map[string]string{"CI": "1", "GOFLAGS": "-mod=readonly"},
	}); err != nil {
		return sc, fmt.Errorf("demo: start build in %s: %w", sb, err)
	}
	logf("build      %s  (stdout + stderr, exits 0)", sc.Build.ID)

	if sc.Tests, err = b.StartProcess(ctx, sb, client.ExecRequest{
		Argv: []string{"sh", "-c", TestScript(opts.Speed), "npm-test"},
	}); err != nil {
		return sc, fmt.Errorf("demo: start tests in %s: %w", sb, err)
	}
	logf("tests      %s  (fails with exit 2)", sc.Tests.ID)

	if sc.Agent, err = b.StartProcess(ctx, sb, agentRequest(opts, false)); err != nil {
		return sc, fmt.Errorf("demo: start agent in %s: %w", sb, err)
	}
	logf("agent      %s  (JSONL, about %s)", sc.Agent.ID, scale(AgentDuration(false), opts.Speed).Round(time.Second))

	if sc.Terminal, err = b.CreateTerminal(ctx, sb, client.TerminalRequest{
		Argv: []string{"sh"}, Env: map[string]string{"PS1": "demo$ "}, Cols: 100, Rows: 30,
	}); err != nil {
		return sc, fmt.Errorf("demo: create terminal in %s: %w", sb, err)
	}
	logf("terminal   %s  (sh)", sc.Terminal.ID)

	if opts.NoReplace {
		return sc, nil
	}

	// Let the build finish first so the old incarnation keeps a confirmed ending next to the
	// lost agent.
	if err := sleep(ctx, time.Until(start.Add(scale(opts.ReplaceAfter, opts.Speed)))); err != nil {
		return sc, err
	}
	if err := b.ReplaceSandbox(ctx, sb); err != nil {
		if errors.Is(err, client.ErrUnsupported) {
			logf("replace    skipped: this bridge cannot replace containers (a local bridge extension)")
			return sc, nil
		}
		return sc, fmt.Errorf("demo: replace container of %s: %w", sb, err)
	}
	sc.Replaced = true
	logf("replaced   the container of %s (the agent above is now LOST)", sb)

	if sc.Agent2, err = b.StartProcess(ctx, sb, agentRequest(opts, true)); err != nil {
		return sc, fmt.Errorf("demo: relaunch agent in %s: %w", sb, err)
	}
	logf("agent      %s  (relaunched in the new container)", sc.Agent2.ID)
	if sc.Terminal2, err = b.CreateTerminal(ctx, sb, client.TerminalRequest{
		Argv: []string{"sh"}, Env: map[string]string{"PS1": "demo$ "}, Cols: 100, Rows: 30,
	}); err != nil {
		return sc, fmt.Errorf("demo: create terminal in %s: %w", sb, err)
	}
	logf("terminal   %s  (sh, new container)", sc.Terminal2.ID)
	return sc, nil
}

func agentRequest(opts Options, resumed bool) client.ExecRequest {
	if opts.Executable != "" {
		// argv[0] is the program's name, found through PATH: the command reads as the user would
		// type it, not as a build cache path (go run's binary lives in one)
		dir, name := filepath.Split(opts.Executable)
		argv := []string{name, "demo", "agent", "--speed", fmt.Sprint(opts.Speed)}
		if resumed {
			argv = append(argv, "--resume")
		}
		path := filepath.Clean(dir)
		if p := os.Getenv("PATH"); p != "" {
			path += string(os.PathListSeparator) + p
		}
		return client.ExecRequest{Argv: argv, Env: map[string]string{"PATH": path}}
	}
	name := "claude"
	return client.ExecRequest{Argv: []string{"sh", "-c", AgentShellScript(opts.Speed, resumed), name}}
}

// BuildScript is a Go-style build that takes about 16 s at speed 1: progress on stdout, warnings
// on stderr, ANSI colours, exit 0.
func BuildScript(speed float64) string {
	p := func(d time.Duration) string {
		if s := shellSeconds(scale(d, speed)); s != "" {
			return "sleep " + s + "\n"
		}
		return ""
	}
	var b strings.Builder
	b.WriteString("set -e\n")
	b.WriteString("step() { printf '\\033[1;34m==>\\033[0m %s\\n' \"$1\"; }\n")
	b.WriteString("warn() { printf '\\033[33mwarning:\\033[0m %s\\n' \"$1\" >&2; }\n")
	b.WriteString("step 'go mod download'\n" + p(1500*time.Millisecond))
	b.WriteString("echo 'go: downloading github.com/shopspring/decimal v1.4.0'\n" + p(400*time.Millisecond))
	b.WriteString("echo 'go: downloading golang.org/x/sync v0.10.0'\n" + p(900*time.Millisecond))
	b.WriteString("step 'go vet ./...'\n" + p(1200*time.Millisecond))
	b.WriteString("warn 'internal/cache/lru.go:88:2: result of evict is never used'\n" + p(600*time.Millisecond))
	b.WriteString("step 'go build -o bin/shop ./cmd/shop'\n")
	b.WriteString("for pkg in cart catalog checkout discounts inventory orders payments search; do\n" +
		"  echo \"   compiling example.com/shop/internal/$pkg\"\n  " + strings.TrimSuffix(p(700*time.Millisecond), "\n") + "\ndone\n")
	b.WriteString("warn 'cmd/shop/main.go:41:6: flag \"legacy-prices\" is deprecated'\n" + p(500*time.Millisecond))
	b.WriteString("step 'go test ./internal/...'\n" + p(800*time.Millisecond))
	b.WriteString("for pkg in cart catalog checkout discounts inventory orders payments search; do\n" +
		"  printf 'ok  \\texample.com/shop/internal/%-10s\\t0.%03ds\\n' \"$pkg\" $(( ${#pkg} * 37 ))\n  " +
		strings.TrimSuffix(p(400*time.Millisecond), "\n") + "\ndone\n")
	b.WriteString("printf '\\033[32mbuild finished\\033[0m: bin/shop (12.4 MB)\\n'\n")
	return b.String()
}

// TestScript is a test run that fails after about 3 s at speed 1 with exit 2.
func TestScript(speed float64) string {
	p := func(d time.Duration) string {
		if s := shellSeconds(scale(d, speed)); s != "" {
			return "sleep " + s + "\n"
		}
		return ""
	}
	var b strings.Builder
	b.WriteString("echo '> shop-web@2.3.0 test'\necho '> vitest run'\necho\n" + p(800*time.Millisecond))
	b.WriteString("printf ' \\033[32m✓\\033[0m src/cart.test.ts (9 tests) 12ms\\n'\n" + p(400*time.Millisecond))
	b.WriteString("printf ' \\033[32m✓\\033[0m src/catalog.test.ts (8 tests) 19ms\\n'\n" + p(400*time.Millisecond))
	b.WriteString("printf ' \\033[31m❯\\033[0m src/checkout.test.ts (6 tests | 1 failed) 23ms\\n'\n" + p(300*time.Millisecond))
	b.WriteString("printf '\\033[41;97m FAIL \\033[0m src/checkout.test.ts > applies discount codes\\n' >&2\n")
	b.WriteString("echo 'AssertionError: expected 90 to be 81 // Object.is equality' >&2\n")
	b.WriteString("echo '  ❯ src/checkout.test.ts:42:41' >&2\n" + p(500*time.Millisecond))
	b.WriteString("echo\necho ' Test Files  1 failed | 2 passed (3)'\necho '      Tests  1 failed | 23 passed (24)'\n")
	b.WriteString("exit 2\n")
	return b.String()
}

// The scene runs on the real client.
var _ Bridge = (*client.Client)(nil)
