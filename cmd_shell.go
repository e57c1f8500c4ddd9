package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newShellCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "shell",
		Short: "shell (being built)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("shell: not built yet")
		},
	}
}
