// Package kubeclient makes the benchmarks' client-go clients from a kubeconfig file. It
// imports nothing client-go does not: the floor programs (podbench/listwatch,
// policybench/policyd) use it, and their RSS is measured.
package kubeclient

import (
	"context"
	"fmt"
	"net"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// New is a clientset of kubeconfig with client-go's defaults, and the configuration it was
// made from (for the clients of other API groups).
func New(kubeconfig string) (*kubernetes.Clientset, *rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	c, err := kubernetes.NewForConfig(cfg)
	return c, cfg, err
}

// Unlimited is kubeconfig's configuration without a client-side rate limit and with a
// Dial of its own, which keeps client-go from sharing one transport (and connection)
// between the clients made from it: each is a separate program's client.
func Unlimited(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1
	cfg.Dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	return cfg, nil
}

// Clients are n clientsets, each of a configuration config makes for it.
func Clients(n int, config func() (*rest.Config, error)) ([]*kubernetes.Clientset, error) {
	var out []*kubernetes.Clientset
	for range n {
		cfg, err := config()
		if err != nil {
			return nil, err
		}
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Wait is a clientset of kubeconfig (QPS and burst 5000: the benchmark's own client must
// not be what limits it) once the API server answers a GET of namespace default, polled
// every 100ms; the kubeconfig need not exist yet (miniapi writes it as it starts). It
// gives up after timeout.
func Wait(ctx context.Context, kubeconfig string, timeout time.Duration) (*kubernetes.Clientset, error) {
	deadline := time.Now().Add(timeout)
	for {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err == nil {
			cfg.QPS, cfg.Burst = 5000, 5000
			var c *kubernetes.Clientset
			if c, err = kubernetes.NewForConfig(cfg); err == nil {
				if _, err = c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil {
					return c, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("miniapi did not come up: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
