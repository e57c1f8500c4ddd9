package cmdutil

import (
	"io"

	"github.com/spf13/cobra"
)

// IOStreams are a command's input, output and error output: what its options hold so that Run
// needs no cobra.Command (a test sets them to buffers).
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// StreamsOf is cmd's streams (os.Stdin, os.Stdout and os.Stderr unless a test set others).
func StreamsOf(cmd *cobra.Command) IOStreams {
	return IOStreams{In: cmd.InOrStdin(), Out: cmd.OutOrStdout(), ErrOut: cmd.ErrOrStderr()}
}
