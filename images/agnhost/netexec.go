package main

import (
	"os"
	"syscall"

	"github.com/spf13/cobra"
)

// netexecCommand runs our netexec (images/netexec, at /netexec in the image), which takes
// upstream agnhost netexec's flags itself; its own gRPC health port stays off, as
// upstream has none.
func netexecCommand() *cobra.Command {
	return &cobra.Command{
		Use:                "netexec",
		Short:              "Serves HTTP(S) and UDP test endpoints (images/netexec)",
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			argv := append([]string{"/netexec", "--grpc-port=0"}, args...)
			return syscall.Exec(argv[0], argv, os.Environ())
		},
	}
}
