// Command corewatch is podbench's narrow floor for minilet's memory: listwatch's work (a
// LIST and WATCH of the node's pods and of its Node into informers) through a REST client
// of the core/v1 group alone, with a scheme of only its kinds. It links no clientset, so
// neither client-go's scheme of every API group nor those groups' types: what a node
// agent whose client knows only the kinds it reads would pay. It prints "synced" once
// both caches have synced, then runs until killed.
package main

import (
	"context"

	"github.com/minik8s/minik8s/bench/internal/nodewatch"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	nodewatch.Main("corewatch", start)
}

func start(ctx context.Context, kubeconfig, node string) ([]cache.InformerSynced, error) {
	client, err := coreClient(kubeconfig)
	if err != nil {
		return nil, err
	}
	informer := func(resource string, obj runtime.Object, field, value string) cache.SharedIndexInformer {
		lw := cache.NewFilteredListWatchFromClient(client, resource, metav1.NamespaceAll, func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector(field, value).String()
		})
		return cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	pods := informer("pods", &corev1.Pod{}, "spec.nodeName", node)
	nodes := informer("nodes", &corev1.Node{}, "metadata.name", node)
	go pods.RunWithContext(ctx)
	go nodes.RunWithContext(ctx)
	return []cache.InformerSynced{pods.HasSynced, nodes.HasSynced}, nil
}

// coreClient is a REST client of the core/v1 group with client-go's defaults (as
// kubernetes.NewForConfig's CoreV1 client), decoding through a scheme of core/v1's kinds.
func coreClient(kubeconfig string) (*rest.RESTClient, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	cfg.GroupVersion = &corev1.SchemeGroupVersion
	cfg.APIPath = "/api"
	cfg.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(scheme, serializer.NewCodecFactory(scheme)).WithoutConversion()
	cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	return rest.RESTClientFor(cfg)
}
