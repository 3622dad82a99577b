// Command miniproxy is the service proxy: it turns Services and EndpointSlices into
// kube-proxy's iptables rules, or IPVS virtual servers, on this node.
package main

import (
	"fmt"
	"os"

	"github.com/minik8s/minik8s/cmd/internal/apilbcmd"
	"github.com/minik8s/minik8s/pkg/daemon"
	"github.com/minik8s/minik8s/pkg/proxy/apiclient"
	"github.com/minik8s/minik8s/pkg/proxy/iptables"
	"github.com/minik8s/minik8s/pkg/proxy/ipvs"
	"github.com/minik8s/minik8s/pkg/proxy/server"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if err := newCommand().Execute(); err != nil {
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	var o server.Options
	var kubeconfig string
	var cleanup, verbose bool
	cmd := &cobra.Command{
		Use:          "miniproxy",
		Short:        "Service proxy: Services and EndpointSlices as kube-proxy's iptables rules or IPVS virtual servers",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := daemon.Logger(verbose)
			ctx, stop := daemon.SignalContext()
			defer stop()
			if cleanup {
				// Both modes' leftovers: the iptables mode's chains first, as they may
				// reference chains the IPVS mode shares.
				if err := iptables.Cleanup(ctx); err != nil {
					return err
				}
				if err := ipvs.Cleanup(ctx); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "removed every miniproxy chain, rule, ip set, IPVS virtual server and kube-ipvs0")
				return nil
			}
			if err := o.Validate(); err != nil {
				return err
			}
			cfg, err := restConfig(kubeconfig, "miniproxy", "")
			if err != nil {
				return err
			}
			client, err := apiclient.New(cfg)
			if err != nil {
				return err
			}
			o.Ready = daemon.NotifyReady
			return server.Run(ctx, client, o, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig to reach the API server")
	o.AddFlags(f)
	f.BoolVar(&cleanup, "cleanup", false, "remove every chain and rule miniproxy made, then exit")
	f.BoolVarP(&verbose, "verbose", "v", false, "debug logging")
	cmd.AddCommand(explainCommand(), apilbcmd.New("This node's stable API address: balance TCP connections over the API servers, leaving out those whose /readyz fails (apilb.service)"))
	return cmd
}

// restConfig is the client configuration of the --kubeconfig the command needs (why: for
// what, said when it is missing), for a client named userAgent.
func restConfig(kubeconfig, userAgent, why string) (*rest.Config, error) {
	if kubeconfig == "" {
		return nil, fmt.Errorf("--kubeconfig is required%s", why)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.UserAgent = userAgent
	return cfg, nil
}
