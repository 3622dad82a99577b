package controlplane

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestAPIServerID: the identity kube-apiserver 1.36 took on this machine (host name "vm").
func TestAPIServerID(t *testing.T) {
	if got, want := apiServerID("vm"), "apiserver-wlv32tlttr4jl3gtroqexyxapa"; got != want {
		t.Errorf("apiServerID(vm) = %s, want %s", got, want)
	}
}

// TestAPIServerIdentityLease: miniapi keeps kube-apiserver's identity lease in kube-system,
// labelled so `kubectl get leases -l apiserver.kubernetes.io/identity=kube-apiserver`
// lists it, held for an hour and renewed; the collector deletes identity leases that
// expired and keeps the others.
func TestAPIServerIdentityLease(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	leases := c.client.CoordinationV1().Leases(metav1.NamespaceSystem)
	var ours *coordinationv1.Lease
	for deadline := time.Now().Add(30 * time.Second); ours == nil; time.Sleep(200 * time.Millisecond) {
		list, err := leases.List(ctx, metav1.ListOptions{LabelSelector: "apiserver.kubernetes.io/identity=kube-apiserver"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) == 1 {
			ours = &list.Items[0]
		} else if time.Now().After(deadline) {
			t.Fatalf("identity leases: %d, want 1", len(list.Items))
		}
	}
	if !strings.HasPrefix(ours.Name, "apiserver-") || !strings.HasPrefix(ptr.Deref(ours.Spec.HolderIdentity, ""), ours.Name+"_") ||
		ptr.Deref(ours.Spec.LeaseDurationSeconds, 0) != 3600 || ours.Spec.RenewTime == nil || ours.Labels["kubernetes.io/hostname"] == "" {
		t.Errorf("identity lease %s: holder %q, duration %v, renewed %v, labels %v", ours.Name, ptr.Deref(ours.Spec.HolderIdentity, ""),
			ptr.Deref(ours.Spec.LeaseDurationSeconds, 0), ours.Spec.RenewTime, ours.Labels)
	}

	lease := func(name string, renewed time.Time) {
		t.Helper()
		_, err := leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"apiserver.kubernetes.io/identity": "kube-apiserver"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name + "_x"), LeaseDurationSeconds: ptr.To[int32](3600),
				RenewTime: &metav1.MicroTime{Time: renewed}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	lease("apiserver-gone", now.Add(-2*time.Hour))
	lease("apiserver-alive", now.Add(-30*time.Minute))
	collectIdentityLeases(ctx, c.client, now, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := leases.Get(ctx, "apiserver-gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("expired identity lease: %v, want it deleted", err)
	}
	for _, name := range []string{"apiserver-alive", ours.Name} {
		if _, err := leases.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("identity lease %s: %v", name, err)
		}
	}
}
