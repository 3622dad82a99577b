package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// pauseCommand sleeps until SIGINT or SIGTERM, then exits 0, as agnhost pause does.
func pauseCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "pause",
		Short: "Pauses until SIGINT or SIGTERM",
		Args:  cobra.NoArgs,
		Run: func(*cobra.Command, []string) {
			fmt.Println("Paused")
			signals := make(chan os.Signal, 1)
			signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
			sig := <-signals
			fmt.Printf("Shutting down after receiving signal: %s.\n", sig)
		},
	}
}
