package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newConfigCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "config",
		Short: "config (being built)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("config: not built yet")
		},
	}
}
