package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/store/etcdtest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLeaderElectionFailover: two miniapi on one etcd, the first holding both Leases and
// running the controllers and the scheduler; when it stops, the second takes over within
// 20 s and its controllers act.
func TestLeaderElectionFailover(t *testing.T) {
	etcd := etcdtest.ForTest(t)
	storeFlag := "etcd://" + strings.Join(etcd.HostPorts, ",")
	elect := func(o *Options) {
		o.Store = storeFlag
		o.LeaderElection = LeaderElection{Enabled: true, LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second}
	}
	first := newRestartable(t, elect)
	a := first.start()
	ctx := context.Background()
	holder := func(c *cluster, lease string) string {
		l, err := c.client.CoordinationV1().Leases("kube-system").Get(ctx, lease, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	var leader string
	waitFor(t, "the first miniapi to lead the controllers", func() bool { leader = holder(a, "kube-controller-manager"); return leader != "" })
	waitFor(t, "the first miniapi to lead the scheduler", func() bool { return holder(a, "kube-scheduler") == leader })
	b := startClusterWith(t, elect)
	b.mustKubectl(t, "", "create", "deployment", "web", "--image=localhost/minik8s/netexec:v1", "--replicas=2")
	countPods := func() int {
		list, err := b.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return -1
		}
		return len(list.Items)
	}
	waitFor(t, "2 pods from the leader's controllers", func() bool { return countPods() == 2 })
	if h := holder(b, "kube-controller-manager"); h != leader {
		t.Fatalf("the second miniapi took the lease while the first led: %q", h)
	}

	first.stop()
	start := time.Now()
	waitFor(t, "the second miniapi to lead", func() bool {
		h := holder(b, "kube-controller-manager")
		return h != "" && h != leader && holder(b, "kube-scheduler") == h
	})
	b.mustKubectl(t, "", "scale", "deployment", "web", "--replicas=3")
	waitFor(t, "3 pods after the failover", func() bool { return countPods() == 3 })
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("failover took %v, want within 20 s", took)
	}
	time.Sleep(time.Second)
	if n := countPods(); n != 3 {
		t.Errorf("%d pods after the failover settled, want exactly 3", n)
	}
}
