package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newAttachCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "attach",
		Short: "attach (being built)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("attach: not built yet")
		},
	}
}
