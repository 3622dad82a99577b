package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// goHeap reads minilet's Go heap from its /metrics (the Go collector's memstats), through
// the API server's node proxy: in use (live objects and the garbage not yet swept, spans
// holding objects) and allocated (live or not yet collected).
func goHeap(ctx context.Context, client kubernetes.Interface, node string) (inuse, alloc float64, err error) {
	body, err := client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy/metrics").DoRaw(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("minilet's /metrics through the node proxy: %w", err)
	}
	values := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if name == "go_memstats_heap_inuse_bytes" || name == "go_memstats_heap_alloc_bytes" {
			if v, err := strconv.ParseFloat(value, 64); ok && err == nil {
				values[name] = v / (1 << 20)
			}
		}
	}
	if len(values) != 2 {
		return 0, 0, fmt.Errorf("minilet's /metrics has no go_memstats_heap_inuse_bytes or go_memstats_heap_alloc_bytes")
	}
	return values["go_memstats_heap_inuse_bytes"], values["go_memstats_heap_alloc_bytes"], nil
}
