package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/minik8s/minik8s/pkg/agent/hostnetwork"
	"github.com/minik8s/minik8s/pkg/network/inspect"
	"github.com/minik8s/minik8s/pkg/network/nodenet"
	"github.com/minik8s/minik8s/pkg/network/policy"
	"github.com/minik8s/minik8s/pkg/network/policy/policyinformers"
	"k8s.io/client-go/kubernetes"
	anpclient "sigs.k8s.io/network-policy-api/pkg/client/clientset/versioned"
)

// networkCommand prints the node's pod network: `minilet network`.
func networkCommand() *cobra.Command {
	var rootDir, bridge, output string
	var cleanup bool
	cmd := &cobra.Command{
		Use:   "network",
		Short: "Show this node's pod network: the bridge, each pod's veth pair, routes to other nodes' pods, the VXLAN device",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cleanup {
				return errors.Join(nodenet.Cleanup(), hostnetwork.Remove(rootDir), policy.Cleanup(context.Background()))
			}
			if output != "text" && output != "json" {
				return fmt.Errorf("-o %q: want text or json", output)
			}
			r, err := inspect.Collect(bridge, filepath.Join(rootDir, "cni", "cache"))
			if err != nil {
				return err
			}
			if output == "json" {
				return r.WriteJSON(os.Stdout)
			}
			return r.WriteText(os.Stdout)
		},
	}
	cmd.Flags().StringVar(&rootDir, "root-dir", "/var/lib/minilet", "minilet's --root-dir (CNI results are cached below it)")
	cmd.Flags().StringVar(&bridge, "cni-bridge", "cni0", "minilet's --cni-bridge")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	cmd.Flags().BoolVar(&cleanup, "cleanup", false, "remove what minilet made between nodes (its routes, the VXLAN device, the egress rules and set, the NetworkPolicy chains and sets) and the bind mount of the node's network namespace under --root-dir, and exit")
	return cmd
}

// runNetworkPolicy enforces NetworkPolicies, with the AdminNetworkPolicies before them and
// the BaselineAdminNetworkPolicy after, for the node's pods until ctx ends.
func runNetworkPolicy(ctx context.Context, client kubernetes.Interface, adminPolicies anpclient.Interface, node string, log *slog.Logger) {
	c := policyinformers.NewController(client, adminPolicies, node, log)
	if err := c.Run(ctx); err != nil {
		log.Error("network policy enforcement stopped", "err", err)
	}
}
