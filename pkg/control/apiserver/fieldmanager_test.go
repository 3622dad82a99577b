package apiserver

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestManagerFromUserAgent(t *testing.T) {
	for ua, want := range map[string]string{
		"kubectl/v1.32.0 (linux/amd64) kubernetes/abc": "kubectl",
		"shop-controller":                 "shop-controller",
		"tab\tbed/1.0":                    "tabbed",
		strings.Repeat("x", 200) + "/1.0": strings.Repeat("x", 128),
		"":                                "",
	} {
		if got := managerFromUserAgent(ua); got != want {
			t.Errorf("managerFromUserAgent(%q) = %q, want %q", ua, got, want)
		}
	}
}

func podFieldManagers(t testing.TB) (*fieldManagers, *registry.Resource) {
	reg, err := registry.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	pods, _ := reg.Lookup(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	f := newFieldManagers(reg, slog.Default())
	if len(f.unavailable) > 0 {
		t.Fatal(f.unavailable)
	}
	return f, pods
}

func trackedPod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Labels: map[string]string{"app": "a"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

func withOwner(manager string) context.Context {
	return context.WithValue(context.Background(), fieldOwnerKey{}, &fieldOwner{manager: manager})
}

// Writes through the main resource own spec and metadata, never status; writes through
// status own status alone, recorded as the status subresource.
func TestTrackOwnsWhatEachWriteChanged(t *testing.T) {
	f, pods := podFieldManagers(t)
	created := f.track(withOwner("creator"), pods, "", nil, trackedPod()).(*corev1.Pod)
	if len(created.ManagedFields) != 1 || created.ManagedFields[0].Manager != "creator" || created.ManagedFields[0].Operation != metav1.ManagedFieldsOperationUpdate {
		t.Fatalf("create: %+v", created.ManagedFields)
	}

	withStatus := created.DeepCopy()
	withStatus.Status.Message = "running"
	updated := f.track(withOwner("kubelet"), pods, "status", created, withStatus).(*corev1.Pod)
	entry := managedBy(updated, "kubelet")
	if entry == nil || entry.Subresource != "status" || !strings.Contains(string(entry.FieldsV1.Raw), "f:message") || strings.Contains(string(entry.FieldsV1.Raw), "f:spec") {
		t.Errorf("status update: %+v", updated.ManagedFields)
	}

	relabelled := updated.DeepCopy()
	relabelled.Labels["tier"] = "web"
	relabelled.Status.Reason = "ignored through the main resource"
	updated = f.track(withOwner("labeller"), pods, "", updated, relabelled).(*corev1.Pod)
	if entry := managedBy(updated, "labeller"); entry == nil || !strings.Contains(string(entry.FieldsV1.Raw), "f:tier") || strings.Contains(string(entry.FieldsV1.Raw), "f:status") {
		t.Errorf("main resource update: %+v", updated.ManagedFields)
	}

	// Without a request's field owner (the server's own writes) nothing is recorded.
	if internal := f.track(context.Background(), pods, "", nil, trackedPod()); mustMeta(internal).GetManagedFields() != nil {
		t.Errorf("internal write got managedFields: %+v", mustMeta(internal).GetManagedFields())
	}
}

func managedBy(obj metav1.Object, manager string) *metav1.ManagedFieldsEntry {
	for _, m := range obj.GetManagedFields() {
		if m.Manager == manager {
			return &m
		}
	}
	return nil
}

// BenchmarkTrackPodStatusUpdate is the cost managed fields add to a kubelet status update.
func BenchmarkTrackPodStatusUpdate(b *testing.B) {
	f, pods := podFieldManagers(b)
	live := f.track(withOwner("creator"), pods, "", nil, trackedPod()).(*corev1.Pod)
	ctx := withOwner("kubelet")
	b.ResetTimer()
	for i := range b.N {
		obj := live.DeepCopy()
		obj.Status.Message = string(rune('a' + i%26))
		f.track(ctx, pods, "status", live, obj)
	}
}
