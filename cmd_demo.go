package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newDemoCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "demo (being built)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("demo: not built yet")
		},
	}
}
