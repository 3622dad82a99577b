package main

import (
	"github.com/minik8s/minik8s/pkg/daemon"
	"github.com/minik8s/minik8s/pkg/proxy/explain"
	"github.com/spf13/cobra"
)

func explainCommand() *cobra.Command {
	var o explain.Options
	var kubeconfig string
	var port int32
	cmd := &cobra.Command{
		Use:   "explain (--service NAMESPACE/NAME | --from POD|IP --to POD|SERVICE|IP) [--port PORT] [--protocol TCP|UDP|SCTP] [-o json]",
		Short: "Show the path a packet to a Service takes through the iptables rules this node holds now, and the network policy verdict",
		Long: "Reads the Service (cluster IP, ports, node ports) from the API and the rules from the kernel\n" +
			"(iptables-save -c), and prints the chains a packet passes, each KUBE-SEP it may reach with its\n" +
			"probability and packet counters, the DNAT target and whether the source is masqueraded.\n" +
			"With --from POD or --to, it also gives the policy verdict of each connection (to each\n" +
			"endpoint of a Service, or to the pod): the egress of the source, the ingress of the destination,\n" +
			"the policies isolating them (AdminNetworkPolicies with their priority, NetworkPolicies, the\n" +
			"BaselineAdminNetworkPolicy), the tier and rule that allowed or the denial, and the counters of\n" +
			"those rules on this node. POD is NAMESPACE/NAME; --to takes pod/NAMESPACE/NAME or\n" +
			"service/NAMESPACE/NAME when a pod and a Service share the name, or an address (with --port).",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Port = port
			if err := o.Validate(); err != nil {
				return err
			}
			cfg, err := restConfig(kubeconfig, "miniproxy-explain", " (explain reads the Service from the API)")
			if err != nil {
				return err
			}
			client, err := explain.NewClient(cfg)
			if err != nil {
				return err
			}
			ctx, stop := daemon.SignalContext()
			defer stop()
			return explain.Run(ctx, client, o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig to reach the API server")
	f.StringVar(&o.Service, "service", "", "the Service, NAMESPACE/NAME")
	f.StringVar(&o.From, "from", "", "source of the packet: an address or a pod, NAMESPACE/NAME (default: any, decisions shown as conditions)")
	f.StringVar(&o.To, "to", "", "destination pod or Service, NAMESPACE/NAME (instead of --service)")
	f.Int32Var(&port, "port", 0, "a service port or node port, or the destination pod's port (default: every service port)")
	f.StringVar(&o.Protocol, "protocol", "", "TCP, UDP or SCTP (default: every service port's; TCP to a pod)")
	f.StringVarP(&o.Output, "output", "o", "", "output format: json")
	return cmd
}
