package main

import (
	"fmt"
	"os"
	"syscall"

	"github.com/spf13/cobra"
)

// netexecCommand runs our netexec server (images/netexec, at /netexec in the image) with
// agnhost's flags; its endpoints are listed in docs/conformance.md.
func netexecCommand() *cobra.Command {
	httpPort, udpPort, sctpPort := 8080, 8081, -1
	cmd := &cobra.Command{
		Use:   "netexec",
		Short: "Serves HTTP and UDP test endpoints (images/netexec)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if sctpPort != -1 {
				return fmt.Errorf("--sctp-port: SCTP is not served by this agnhost (docs/conformance.md)")
			}
			argv := []string{"/netexec", fmt.Sprintf("--http-port=%d", httpPort), fmt.Sprintf("--udp-port=%d", max(udpPort, 0)), "--grpc-port=0"}
			return syscall.Exec(argv[0], argv, os.Environ())
		},
	}
	cmd.Flags().IntVar(&httpPort, "http-port", httpPort, "HTTP port")
	cmd.Flags().IntVar(&udpPort, "udp-port", udpPort, "UDP port (-1 disables it)")
	cmd.Flags().IntVar(&sctpPort, "sctp-port", sctpPort, "SCTP port (only -1, disabled, is supported)")
	return cmd
}
