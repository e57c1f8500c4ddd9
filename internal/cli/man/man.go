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

func NewCmdMan() *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write sandscope's man pages into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: err}
			}
			root := cmd.Root()
			root.InitDefaultCompletionCmd()
			root.DisableAutoGenTag = true
			date := manDate()
			h := &doc.GenManHeader{Title: "SANDSCOPE", Section: "1", Date: &date,
				Source: "sandscope " + cmdutil.Version, Manual: "sandscope manual"}
			if err := doc.GenManTree(root, h, dir); err != nil {
				return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("man pages: %w", err)}
			}
			return nil
		},
	}
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
