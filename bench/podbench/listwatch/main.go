// Command listwatch is podbench's floor for minilet's memory: a bare client-go process
// that does what any node agent does at 0 pods, a LIST and WATCH of its node's pods and
// of its Node through client-go's clientset and shared informers, and nothing else.
// It prints "synced" once both caches have synced, then runs until killed.
package main

import (
	"context"

	"github.com/minik8s/minik8s/bench/internal/kubeclient"
	"github.com/minik8s/minik8s/bench/internal/nodewatch"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

func main() {
	nodewatch.Main("listwatch", start)
}

func start(ctx context.Context, kubeconfig, node string) ([]cache.InformerSynced, error) {
	client, _, err := kubeclient.New(kubeconfig)
	if err != nil {
		return nil, err
	}
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
	return synced, nil
}
