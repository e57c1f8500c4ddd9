package attach

import (
	"context"
	"io"
)

// Command adapts Run to Bubble Tea's tea.ExecCommand (Run, SetStdin, SetStdout, SetStderr), so the
// TUI can hand the whole screen to an attachment with tea.Exec and get it back afterwards. Result
// holds how the attachment ended once Run returned.
type Command struct {
	ctx    context.Context
	conn   Conn
	opts   Options
	Result Result
}

// enterOwnScreen switches to the alternate screen and clears it; leaveOwnScreen clears the screen
// the attachment ended on (the main one, if the remote program left the alternate screen) and
// leaves the alternate screen.
const (
	enterOwnScreen = "\x1b[?1049h\x1b[H\x1b[2J"
	leaveOwnScreen = "\x1b[H\x1b[2J\x1b[?1049l"
)

// NewCommand prepares an attachment of conn; tea.Exec calls its Run with the program's stdio.
func NewCommand(ctx context.Context, conn Conn, opts Options) *Command {
	return &Command{ctx: ctx, conn: conn, opts: opts}
}

func (c *Command) SetStdin(r io.Reader)  { c.opts.Stdin = r }
func (c *Command) SetStdout(w io.Writer) { c.opts.Stdout = w }
func (c *Command) SetStderr(w io.Writer) { c.opts.Stderr = w }

// Run attaches until detach or the terminal's end. It returns an error only when the attachment
// could not run or broke; a remote exit, loss or detach is reported in Result.
func (c *Command) Run() error {
	out := c.opts.Stdout
	if c.opts.OwnScreen && out != nil {
		_, _ = io.WriteString(out, enterOwnScreen)
		defer func() { _, _ = io.WriteString(out, leaveOwnScreen) }()
	}
	res, err := Run(c.ctx, c.conn, c.opts)
	c.Result = res
	return err
}
