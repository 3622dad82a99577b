package main

import (
	"fmt"

	"github.com/minik8s/minik8s/pkg/daemon"
	"github.com/minik8s/minik8s/pkg/proxy/explain"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func explainCommand() *cobra.Command {
	var o explain.Options
	var kubeconfig string
	var port int32
	cmd := &cobra.Command{
		Use:   "explain --service NAMESPACE/NAME [--from IP] [--port PORT] [-o json]",
		Short: "Show the path a packet to a Service takes through the iptables rules this node holds now",
		Long: "Reads the Service (cluster IP, ports, node ports) from the API and the rules from the kernel\n" +
			"(iptables-save -c), and prints the chains a packet passes, each KUBE-SEP it may reach with its\n" +
			"probability and packet counters, the DNAT target and whether the source is masqueraded.",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Port = port
			if err := o.Validate(); err != nil {
				return err
			}
			if kubeconfig == "" {
				return fmt.Errorf("--kubeconfig is required (explain reads the Service from the API)")
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
			}
			cfg.UserAgent = "miniproxy-explain"
			client, err := kubernetes.NewForConfig(cfg)
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
	f.StringVar(&o.From, "from", "", "source address of the packet (default: any, decisions shown as conditions)")
	f.Int32Var(&port, "port", 0, "a service port or node port (default: every port)")
	f.StringVarP(&o.Output, "output", "o", "", "output format: json")
	_ = cmd.MarkFlagRequired("service")
	return cmd
}
