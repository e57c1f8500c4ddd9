package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func runTUI(cmd *cobra.Command, g *globalOptions) error {
	return errors.New("TUI: not built yet")
}
