package fieldmanager

import (
	"context"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/apiserver/internal/apitest"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/builtin"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
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

func podFieldManagers(t testing.TB) (*Managers, *registry.Resource) {
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	pods, _ := reg.Lookup(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	f := New(reg, slog.Default())
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
	return WithOwner(context.Background(), &Owner{Manager: manager})
}

// Writes through the main resource own spec and metadata, never status; writes through
// status own status alone, recorded as the status subresource.
func TestTrackOwnsWhatEachWriteChanged(t *testing.T) {
	f, pods := podFieldManagers(t)
	created := f.Track(withOwner("creator"), pods, "", nil, trackedPod()).(*corev1.Pod)
	if len(created.ManagedFields) != 1 || created.ManagedFields[0].Manager != "creator" || created.ManagedFields[0].Operation != metav1.ManagedFieldsOperationUpdate {
		t.Fatalf("create: %+v", created.ManagedFields)
	}

	withStatus := created.DeepCopy()
	withStatus.Status.Message = "running"
	updated := f.Track(withOwner("kubelet"), pods, "status", created, withStatus).(*corev1.Pod)
	entry := apitest.ManagerEntry(updated, "kubelet")
	if entry == nil || entry.Subresource != "status" || !strings.Contains(string(entry.FieldsV1.Raw), "f:message") || strings.Contains(string(entry.FieldsV1.Raw), "f:spec") {
		t.Errorf("status update: %+v", updated.ManagedFields)
	}

	relabelled := updated.DeepCopy()
	relabelled.Labels["tier"] = "web"
	relabelled.Status.Reason = "ignored through the main resource"
	updated = f.Track(withOwner("labeller"), pods, "", updated, relabelled).(*corev1.Pod)
	if entry := apitest.ManagerEntry(updated, "labeller"); entry == nil || !strings.Contains(string(entry.FieldsV1.Raw), "f:tier") || strings.Contains(string(entry.FieldsV1.Raw), "f:status") {
		t.Errorf("main resource update: %+v", updated.ManagedFields)
	}

	// Without a request's field owner (the server's own writes) nothing is recorded.
	if internal := f.Track(context.Background(), pods, "", nil, trackedPod()); generic.MustMeta(internal).GetManagedFields() != nil {
		t.Errorf("internal write got managedFields: %+v", generic.MustMeta(internal).GetManagedFields())
	}
}

// Our controllers' informers drop managedFields (as Kubernetes' do), so their writes carry
// none: the stored entries must survive them, with the writer's own added.
func TestTrackKeepsStoredEntriesWhenAWriteCarriesNone(t *testing.T) {
	f, pods := podFieldManagers(t)
	created := f.Track(withOwner("creator"), pods, "", nil, trackedPod()).(*corev1.Pod)
	fromCache := created.DeepCopy()
	fromCache.ManagedFields = nil
	fromCache.Status.Message = "scheduled"
	updated := f.Track(withOwner("scheduler"), pods, "status", created, fromCache).(*corev1.Pod)
	if apitest.ManagerEntry(updated, "creator") == nil || apitest.ManagerEntry(updated, "scheduler") == nil {
		t.Errorf("want the creator's and the scheduler's entries, got %+v", updated.ManagedFields)
	}
}

// BenchmarkTrackPodStatusUpdate is the cost managed fields add to a kubelet status update.
func BenchmarkTrackPodStatusUpdate(b *testing.B) {
	f, pods := podFieldManagers(b)
	live := f.Track(withOwner("creator"), pods, "", nil, trackedPod()).(*corev1.Pod)
	ctx := withOwner("kubelet")
	b.ResetTimer()
	for i := range b.N {
		obj := live.DeepCopy()
		obj.Status.Message = string(rune('a' + i%26))
		f.Track(ctx, pods, "status", live, obj)
	}
}

// Converting Go objects without validating them must not change what is recorded: the same
// writes tracked with validation (the library's own conversion) give the same managed fields.
func TestGoTypesTrackAsTheValidatingConverter(t *testing.T) {
	fast, pods := podFieldManagers(t)
	validating, _ := podFieldManagers(t)
	validating.types.kinds = map[schema.GroupVersionKind]*typed.TypedValue{} // every conversion validates

	rich := trackedPod()
	rich.Annotations = map[string]string{"note": "x"}
	rich.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "u1"}}
	rich.Spec.Containers = append(rich.Spec.Containers, corev1.Container{
		Name: "side", Image: "netexec", Args: []string{"--port=8080"},
		Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP, Name: "http"}, {ContainerPort: 8081, Protocol: corev1.ProtocolUDP}},
		Env:   []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}},
		LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}},
	})
	rich.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	rich.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
	nameless := trackedPod()
	nameless.Spec.Containers = append(nameless.Spec.Containers, corev1.Container{Image: "no name"}) // a list key missing

	for name, pod := range map[string]*corev1.Pod{"small": trackedPod(), "rich": rich, "nameless container": nameless} {
		fastCreated := fast.Track(withOwner("creator"), pods, "", nil, pod.DeepCopy()).(*corev1.Pod)
		slowCreated := validating.Track(withOwner("creator"), pods, "", nil, pod.DeepCopy()).(*corev1.Pod)
		sameManagedFields(t, name+": create", fastCreated, slowCreated)

		changed := fastCreated.DeepCopy()
		changed.Labels["tier"] = "web"
		changed.Spec.Containers[0].Image = "busybox:2"
		changed.Status.Phase = corev1.PodRunning
		sameManagedFields(t, name+": update",
			fast.Track(withOwner("editor"), pods, "", fastCreated, changed.DeepCopy()).(*corev1.Pod),
			validating.Track(withOwner("editor"), pods, "", fastCreated, changed.DeepCopy()).(*corev1.Pod))
		sameManagedFields(t, name+": status update",
			fast.Track(withOwner("kubelet"), pods, "status", fastCreated, changed.DeepCopy()).(*corev1.Pod),
			validating.Track(withOwner("kubelet"), pods, "status", fastCreated, changed.DeepCopy()).(*corev1.Pod))
	}
	if len(generic.MustMeta(fast.Track(withOwner("creator"), pods, "", nil, rich.DeepCopy())).GetManagedFields()) != 1 {
		t.Error("the rich pod's create recorded no managed fields")
	}
}

func sameManagedFields(t *testing.T, what string, got, want *corev1.Pod) {
	t.Helper()
	strip := func(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
		out := make([]metav1.ManagedFieldsEntry, len(entries))
		for i, e := range entries {
			e.Time = nil
			out[i] = e
		}
		return out
	}
	if g, w := strip(got.ManagedFields), strip(want.ManagedFields); !reflect.DeepEqual(g, w) {
		t.Errorf("%s: managed fields differ from the validating converter's:\n got  %+v\n want %+v", what, g, w)
	}
}

// BenchmarkTrackPodCreate is the cost managed fields add to a pod create.
func BenchmarkTrackPodCreate(b *testing.B) {
	f, pods := podFieldManagers(b)
	ctx := withOwner("creator")
	for b.Loop() {
		f.Track(ctx, pods, "", nil, trackedPod())
	}
}
