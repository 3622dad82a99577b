// Command policyd is minilet's NetworkPolicy enforcement (pkg/network/policy, wired as
// cmd/minilet wires it, admin policy tiers included) in a process of its own, so that
// bench/policybench measures its RSS as it measures kube-router's. It writes the iptables
// and ipsets of the network namespace it runs in; each sync is logged on stderr.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/minik8s/minik8s/bench/internal/kubeclient"
	"github.com/minik8s/minik8s/pkg/network/policy/policyinformers"
	anpclient "sigs.k8s.io/network-policy-api/pkg/client/clientset/versioned"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server")
	node := flag.String("hostname-override", "", "the node whose pods are enforced")
	flag.Parse()
	if err := run(*kubeconfig, *node); err != nil {
		fmt.Fprintln(os.Stderr, "policyd:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, node string) error {
	if kubeconfig == "" || node == "" {
		return fmt.Errorf("--kubeconfig and --hostname-override are required")
	}
	client, cfg, err := kubeclient.New(kubeconfig)
	if err != nil {
		return err
	}
	admin, err := anpclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return policyinformers.NewController(client, admin, node, log).Run(ctx)
}
