package man

// `sandscope man DIR` writes the man pages (one per command, section 1) that the release archives
// carry. Hidden: it is for packaging, not for users.

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"sandscope/internal/buildinfo"
	"sandscope/internal/cli/cmdutil"
)

// ManOptions are man's argument and the command tree whose pages it writes.
type ManOptions struct {
	Dir  string
	Root *cobra.Command // sandscope's root command (Complete)
}

// NewCmdMan is the man command; runF, when not nil, is called with the options instead of Run.
// (man needs nothing the Factory resolves.)
func NewCmdMan(_ *cmdutil.Factory, runF func(*ManOptions) error) *cobra.Command {
	o := &ManOptions{}
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write sandscope's man pages into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
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
			return o.Run()
		},
	}
}

// Complete takes the directory from args and the tree from cmd's root.
func (o *ManOptions) Complete(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		o.Dir = args[0]
	}
	o.Root = cmd.Root()
	return nil
}

// Validate has nothing to refuse: any directory is made when missing (Run).
func (o *ManOptions) Validate() error { return nil }

// Run writes one page per command (section 1) into Dir.
func (o *ManOptions) Run() error {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: err}
	}
	root := o.Root
	root.InitDefaultCompletionCmd()
	root.DisableAutoGenTag = true
	date := manDate()
	h := &doc.GenManHeader{Title: "SANDSCOPE", Section: "1", Date: &date,
		Source: "sandscope " + cmdutil.Version, Manual: "sandscope manual"}
	if err := doc.GenManTree(root, h, o.Dir); err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("man pages: %w", err)}
	}
	return nil
}

// manDate is the date the pages carry: the build's (release or commit date), else
// SOURCE_DATE_EPOCH, else today. So a release's pages do not change with the day they are made.
func manDate() time.Time {
	if t, err := time.Parse(time.RFC3339, buildinfo.Get().Date); err == nil {
		return t.UTC()
	}
	if s, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64); err == nil {
		return time.Unix(s, 0).UTC()
	}
	return time.Now().UTC()
}
