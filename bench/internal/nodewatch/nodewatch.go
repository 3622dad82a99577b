// Package nodewatch is the shell of podbench's floor programs (podbench/listwatch and
// podbench/corewatch): the -kubeconfig and -node flags, and a watch of the node's pods and
// Node that prints "synced" once its caches have synced, then runs until killed. It links
// client-go's cache alone, so each program's floor is what its own client costs.
package nodewatch

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/tools/cache"
)

// Start starts the informers of node's pods and Node through kubeconfig's cluster, to run
// until ctx ends, and says when their caches have synced.
type Start func(ctx context.Context, kubeconfig, node string) ([]cache.InformerSynced, error)

// Main runs the program name with start until SIGINT or SIGTERM; an error exits 1.
func Main(name string, start Start) {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	node := flag.String("node", "", "name of the node whose pods and Node are watched")
	flag.Parse()
	if err := run(*kubeconfig, *node, start); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

func run(kubeconfig, node string, start Start) error {
	if kubeconfig == "" || node == "" {
		return fmt.Errorf("-kubeconfig and -node are required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	synced, err := start(ctx, kubeconfig, node)
	if err != nil {
		return err
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("caches not synced: %w", ctx.Err())
	}
	fmt.Println("synced")
	<-ctx.Done()
	return nil
}
