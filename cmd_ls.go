package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newLsCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "ls (being built)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("ls: not built yet")
		},
	}
}
