package store

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/freeport"
	"github.com/minik8s/minik8s/pkg/control/store/etcdtest"
)

func TestEtcdConformance(t *testing.T) {
	endpoints := etcdtest.ForTest(t).Endpoints
	var storages atomic.Int64
	runConformance(t, func(t *testing.T) openFunc {
		// Each case gets its own key prefix on the shared etcd.
		prefix := fmt.Sprintf("/conformance-%d", storages.Add(1))
		return func(t *testing.T) Interface {
			s, err := OpenEtcd(endpoints, prefix, nil)
			return closedAtEnd(t, s, err)
		}
	})
}

func TestEtcdUnreachable(t *testing.T) {
	endpoint := "127.0.0.1:" + strconv.Itoa(freeport.For(t)) // nothing listens there any more
	start := time.Now()
	_, err := OpenEtcd([]string{endpoint}, "/x", nil)
	if err == nil || !strings.Contains(err.Error(), endpoint) || !strings.Contains(err.Error(), "not reachable") {
		t.Fatalf("open of an unreachable etcd: %v", err)
	}
	if time.Since(start) > 3*etcdTimeout {
		t.Fatalf("open of an unreachable etcd took %s", time.Since(start))
	}
}
