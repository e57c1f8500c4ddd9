package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newExecCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "exec",
		Short: "exec (being built)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("exec: not built yet")
		},
	}
}
