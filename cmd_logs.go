package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newLogsCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "logs",
		Short: "logs (being built)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("logs: not built yet")
		},
	}
}
