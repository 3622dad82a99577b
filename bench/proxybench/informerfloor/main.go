// Command informerfloor is proxybench's floor for miniproxy's memory: miniproxy's API
// client (pkg/proxy/apiclient, client-go's REST client and informers over a scheme of core/v1
// and discovery.k8s.io/v1) and the two informers miniproxy runs (Services and EndpointSlices, holding proxy.Compact's records),
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
	"github.com/minik8s/minik8s/pkg/proxy/apiclient"
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
	client, err := apiclient.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	factory := apiclient.NewInformers(client, nil, proxy.Compact)
	services := factory.Services()
	slices := factory.EndpointSlices()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), services.HasSynced, slices.HasSynced) {
		return ctx.Err()
	}
	debug.FreeOSMemory()
	fmt.Println("synced")
	<-ctx.Done()
	return nil
}
