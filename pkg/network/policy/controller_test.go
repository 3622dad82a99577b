package policy

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/minik8s/minik8s/pkg/network/nettest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// TestControllerAppliesPodChangesAlone: after the first full build, a peer's label change
// and a new local pod are applied alone (the label change with set members only, the new
// pod with its chains), as the kernel then shows; a policy change builds everything.
func TestControllerAppliesPodChangesAlone(t *testing.T) {
	testenv.RequireTools(t, "iptables-save", "iptables-restore", "ipset")
	node := nettest.NetNS(t, "policyinc")[0]
	st := modelState()
	client := fake.NewClientset(st.Pods[0], st.Pods[1], st.Policies[0])
	factory := informers.NewSharedInformerFactory(client, 0)
	ctrl := New(factory, "node1", slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	ctrl.NetNS = node
	ctx, cancel := context.WithCancel(context.Background())
	infs, err := ctrl.watch(func() {})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	defer nettest.In(t, node, func() error { return Cleanup(context.Background()) })
	for _, inf := range infs {
		cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	}
	// sync waits for the informers to report a change, then syncs it.
	sync := func(what string, changed func() bool) *SyncResult {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			ctrl.mu.Lock()
			defer ctrl.mu.Unlock()
			return changed(), nil
		})
		if err != nil {
			t.Fatalf("%s: the informers saw no change", what)
		}
		res, err := ctrl.syncChanges(ctx)
		if err != nil || res == nil {
			t.Fatalf("%s: sync %v, %v", what, res, err)
		}
		return res
	}
	podChanged := func(key string) func() bool { return func() bool { return ctrl.dirty[key] } }
	inSet := func(ip string) int {
		t.Helper()
		n := 0
		nettest.In(t, node, func() error {
			for _, s := range ctrl.model.b.sets {
				if exec.Command("ipset", "test", s.Name, ip).Run() == nil {
					n++
				}
			}
			return nil
		})
		return n
	}

	if res := sync("start", func() bool { return true }); !res.Full || !res.RulesWritten {
		t.Fatalf("first sync %+v, want a full one writing rules", res)
	}
	pods := client.CoreV1().Pods("x")
	r := st.Pods[1].DeepCopy()
	r.Labels["pod"] = "b"
	if _, err := pods.Update(ctx, r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if res := sync("label", podChanged("x/r")); res.Full || res.RulesWritten || res.SetLines != 3 {
		t.Errorf("a peer's label change: %+v, want 3 set lines and no rules", res)
	}
	if n := inSet("10.0.1.1"); n != 2 {
		t.Errorf("the relabelled peer is in %d sets, want the two peer sets", n)
	}
	n := statePod("x", "n", "node1", "10.0.0.2", map[string]string{"pod": "a"})
	if _, err := pods.Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if res := sync("new pod", podChanged("x/n")); res.Full || !res.RulesWritten || res.Chains != 5 {
		t.Errorf("a new local pod: %+v, want its two chains, TopChain, InputChain and OutputChain written", res)
	}
	var save []byte
	nettest.In(t, node, func() error {
		save, err = exec.Command("iptables-save", "-t", "filter").Output()
		return err
	})
	if ctrl.written != ctrl.model.ruleset().Restore(nil) || !strings.Contains(string(save), "\n:"+ChainName(n, ingress)+" ") {
		t.Errorf("the new pod's chain is not in the kernel:\n%s", save)
	}
	np := st.Policies[0].DeepCopy()
	np.Spec.Ingress = nil
	if _, err := client.NetworkingV1().NetworkPolicies("x").Update(ctx, np, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if res := sync("policy", func() bool { return ctrl.full }); !res.Full || !res.RulesWritten {
		t.Errorf("a policy change: %+v, want a full build writing rules", res)
	}
}
