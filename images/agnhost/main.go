// Command agnhost stands in for Kubernetes' e2e test image
// registry.k8s.io/e2e-test-images/agnhost in the conformance suite (docs/conformance.md):
// one binary whose subcommands are the small servers and probes the suite's pods run
// (`agnhost pause`, `agnhost serve-hostname --port 9376`, ...). Each subcommand keeps the
// flags, ports, paths and output lines the suite relies on; a subcommand the suite calls
// that is not here fails with cobra's "unknown command", so a missing one shows as a
// failed test, never as a silent pass.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{Use: "agnhost", Short: "the servers and probes of the Kubernetes e2e suite's pods", SilenceUsage: true}
	root.AddCommand(pauseCommand(), testWebserverCommand(), serveHostnameCommand(), livenessCommand(),
		porterCommand(), mounttestCommand(), netexecCommand(), nettestCommand(), entrypointTesterCommand(), logsGeneratorCommand(),
		resolvConfCommand("dns-suffix", "search", "Prints the host's DNS suffix list"),
		resolvConfCommand("dns-server-list", "nameserver", "Prints the host's DNS server list"), etcHostsCommand())
	root.AddCommand(webhookCommand(), crdConversionWebhookCommand(), grpcHealthCheckingCommand(), guestbookCommand(), issuerDiscoveryCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
