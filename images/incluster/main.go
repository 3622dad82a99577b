// Command incluster reaches the API server from inside a pod the way client-go programs
// do: rest.InClusterConfig (KUBERNETES_SERVICE_HOST/PORT, the projected token and
// ca.crt), then reads its own pod. It prints the HTTP status and exits 0 only on 200, so
// tests see whether the pod's service account token is accepted.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return fmt.Errorf("in-cluster config: %w", err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return err
	}
	name, err := os.Hostname()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s", strings.TrimSuffix(cfg.Host, "/"), strings.TrimSpace(string(ns)), name)
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(httpReq)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	fmt.Printf("status: %d\n", resp.StatusCode)
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %s", url, strings.TrimSpace(string(body)))
	}
	return nil
}
