// Command listwatch is podbench's floor for minilet's memory: a bare client-go process
// that does what any node agent does at 0 pods, a LIST and WATCH of its node's pods and
// of its Node through client-go's clientset and shared informers, and nothing else.
// It prints "synced" once both caches have synced, then runs until killed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/minik8s/minik8s/bench/internal/kubeclient"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	node := flag.String("node", "", "name of the node whose pods and Node are watched")
	flag.Parse()
	if err := run(*kubeconfig, *node); err != nil {
		fmt.Fprintln(os.Stderr, "listwatch:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, node string) error {
	if kubeconfig == "" || node == "" {
		return fmt.Errorf("-kubeconfig and -node are required")
	}
	client, _, err := kubeclient.New(kubeconfig)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	selector := func(field, value string) informers.SharedInformerOption {
		return informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector(field, value).String()
		})
	}
	pods := informers.NewSharedInformerFactoryWithOptions(client, 0, selector("spec.nodeName", node))
	nodes := informers.NewSharedInformerFactoryWithOptions(client, 0, selector("metadata.name", node))
	synced := []cache.InformerSynced{
		pods.Core().V1().Pods().Informer().HasSynced,
		nodes.Core().V1().Nodes().Informer().HasSynced,
	}
	pods.Start(ctx.Done())
	nodes.Start(ctx.Done())
	defer pods.Shutdown()
	defer nodes.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("caches not synced: %w", ctx.Err())
	}
	fmt.Println("synced")
	<-ctx.Done()
	return nil
}
