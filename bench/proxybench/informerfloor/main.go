// Command informerfloor is proxybench's floor for miniproxy's memory: client-go's clientset
// and the two informers miniproxy runs (Services and EndpointSlices, trimmed by proxy.Trim),
// nothing else. It prints "synced" once both have listed, collects and gives the heap back
// as miniproxy does after a full sync, then waits to be stopped.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"

	"github.com/minik8s/minik8s/pkg/proxy"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: informerfloor KUBECONFIG")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "informerfloor:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(proxy.Trim))
	services := factory.Core().V1().Services().Informer()
	slices := factory.Discovery().V1().EndpointSlices().Informer()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), services.HasSynced, slices.HasSynced) {
		return ctx.Err()
	}
	debug.FreeOSMemory()
	fmt.Println("synced")
	<-ctx.Done()
	return nil
}
