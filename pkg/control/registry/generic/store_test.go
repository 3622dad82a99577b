package generic

import (
	"context"
	"errors"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/allocator"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/builtin"
	"github.com/minik8s/minik8s/pkg/control/store"
	"github.com/minik8s/minik8s/pkg/control/store/storetest"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// newTestStore is a Store on a bbolt file of its own, with the default namespace.
func newTestStore(t *testing.T, admission Admission) (*Store, store.Interface) {
	t.Helper()
	st := storetest.Bolt(t)
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := allocator.NewRanges(st, netip.MustParsePrefix("10.96.0.0/12"), allocator.DefaultNodePorts)
	if err != nil {
		t.Fatal(err)
	}
	bare := New(Config{Store: st, Registry: reg, Ranges: ranges})
	if _, err := bare.Create(t.Context(), bare.resource(t, "namespaces"), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	admission.Mutating = append([]MutatingAdmission{NewNamespaceLifecycle(st, reg)}, admission.Mutating...)
	return New(Config{Store: st, Registry: reg, Ranges: ranges, Admission: admission}), st
}

func (s *Store) resource(t *testing.T, name string) *registry.Resource {
	res, ok := s.reg.Lookup(corev1.SchemeGroupVersion.WithResource(name))
	if !ok {
		t.Fatalf("no core resource %s", name)
	}
	return res
}

// plugin is an admission plugin that records what it saw and may refuse or mutate.
type plugin struct {
	name  string
	seen  *[]string
	label bool  // set a label on the object (mutating)
	fail  error // refuse every write
}

func (p plugin) Admit(_ context.Context, a *Attributes) error {
	*p.seen = append(*p.seen, p.name+" "+string(a.Operation)+" "+a.Subresource)
	if p.label && a.Object != nil && a.Subresource == "" {
		MustMeta(a.Object).SetLabels(map[string]string{"admitted": "yes"})
	}
	return p.fail
}

func (p plugin) Validate(_ context.Context, a *Attributes) error {
	*p.seen = append(*p.seen, p.name+" "+string(a.Operation)+" "+a.Subresource)
	if a.Object != nil && a.Subresource == "" && MustMeta(a.Object).GetUID() == "" && a.Operation == Create {
		return errors.New("validating admission saw an object without its system metadata")
	}
	return p.fail
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
}

// Mutating admission runs first and its change is stored; validating admission runs after
// the kind's preparation and validation, on every write, binding and deletion included;
// a refusal stops the write.
func TestAdmissionHooks(t *testing.T) {
	var seen []string
	mut := plugin{name: "mutating", seen: &seen, label: true}
	val := plugin{name: "validating", seen: &seen}
	s, _ := newTestStore(t, Admission{Mutating: []MutatingAdmission{mut}, Validating: []ValidatingAdmission{val}})
	pods := s.resource(t, "pods")
	ctx := t.Context()
	seen = nil
	created, err := s.Create(ctx, pods, pod("a"), CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.(*corev1.Pod).Labels["admitted"] != "yes" {
		t.Errorf("the mutating plugin's label was not stored: %v", created.(*corev1.Pod).Labels)
	}
	if err := s.Bind(ctx, pods, "default", "a", &corev1.Binding{Target: corev1.ObjectReference{Name: "node-1"}}, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Delete(ctx, pods, "default", "a", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	// The deletion with no grace marks the pod, then removes it: admitted for each.
	want := []string{"mutating CREATE ", "validating CREATE ", "mutating CREATE binding", "validating CREATE binding",
		"mutating DELETE ", "validating DELETE ", "mutating DELETE ", "validating DELETE "}
	if !slices.Equal(seen, want) {
		t.Errorf("admission calls %q, want %q", seen, want)
	}

	refuse := plugin{name: "refusing", seen: &seen, fail: apierrors.NewForbidden(pods.GroupResource(), "b", errors.New("no"))}
	s, st := newTestStore(t, Admission{Validating: []ValidatingAdmission{refuse}})
	if _, err := s.Create(ctx, pods, pod("b"), CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("create refused by admission: %v", err)
	}
	if _, err := st.Get(ctx, Key(pods, "default", "b")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused create was stored: %v", err)
	}
}

// Updates are read-modify-write: a stale resourceVersion is a 409; an object with a
// finalizer is only marked on delete and goes when the finalizer is removed.
func TestUpdateConflictsAndFinalizers(t *testing.T) {
	s, st := newTestStore(t, Admission{})
	ctx := t.Context()
	cms := s.resource(t, "configmaps")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default", Finalizers: []string{"example.com/hold"}}}
	created, err := s.Create(ctx, cms, cm, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := MustMeta(created).GetResourceVersion()
	set := func(v string) UpdateFunc {
		return func(cur runtime.Object) (runtime.Object, error) {
			cur.(*corev1.ConfigMap).Data = map[string]string{"k": v}
			return cur, nil
		}
	}
	if _, err := s.Update(ctx, cms, "default", "c", UpdateOptions{}, set("1")); err != nil {
		t.Fatal(err)
	}
	_, err = s.Update(ctx, cms, "default", "c", UpdateOptions{}, func(cur runtime.Object) (runtime.Object, error) {
		MustMeta(cur).SetResourceVersion(stale)
		return cur, nil
	})
	if !apierrors.IsConflict(err) {
		t.Fatalf("update with a stale resourceVersion: %v, want a conflict", err)
	}
	marked, _, err := s.Delete(ctx, cms, "default", "c", metav1.DeleteOptions{})
	if err != nil || MustMeta(marked).GetDeletionTimestamp() == nil {
		t.Fatalf("delete of a finalized object: %v, %v", marked, err)
	}
	if _, err := st.Get(ctx, Key(cms, "default", "c")); err != nil {
		t.Fatalf("the object went before its finalizer: %v", err)
	}
	if _, err := s.Update(ctx, cms, "default", "c", UpdateOptions{}, func(cur runtime.Object) (runtime.Object, error) {
		MustMeta(cur).SetFinalizers(nil)
		return cur, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, Key(cms, "default", "c")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the object stayed after its last finalizer went: %v", err)
	}
}

// Creating in a namespace that is missing or terminating is refused.
func TestNamespaceLifecycle(t *testing.T) {
	s, _ := newTestStore(t, Admission{})
	ctx := t.Context()
	pods := s.resource(t, "pods")
	p := pod("a")
	p.Namespace = "missing"
	if _, err := s.Create(ctx, pods, p, CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("create in a missing namespace: %v", err)
	}
	nss := s.resource(t, "namespaces")
	if _, err := s.Create(ctx, nss, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "going"}}, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.Namespace = "going"
	if _, err := s.Create(ctx, pods, p, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Delete(ctx, nss, "", "going", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p = pod("b")
	p.Namespace = "going"
	if _, err := s.Create(ctx, pods, p, CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("create in a terminating namespace: %v", err)
	}
}

// tracker records what the field manager was given.
type tracker struct{ seen []*corev1.Pod }

func (tr *tracker) Track(_ context.Context, _ *registry.Resource, _ string, _, obj runtime.Object) runtime.Object {
	tr.seen = append(tr.seen, obj.(*corev1.Pod).DeepCopy())
	return obj
}

// As in Kubernetes, the requester's managed fields are those of its defaulted request: not
// what mutating admission adds, nor the priority, which is admission's to set.
func TestCreateTracksTheRequestBeforeAdmission(t *testing.T) {
	var seen []string
	s, _ := newTestStore(t, Admission{Mutating: []MutatingAdmission{plugin{name: "label", seen: &seen, label: true}}})
	tr := &tracker{}
	s.fields = tr
	created, err := s.Create(t.Context(), s.resource(t, "pods"), pod("tracked"), CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.seen) != 1 {
		t.Fatalf("tracked %d times, want once", len(tr.seen))
	}
	req := tr.seen[0]
	if req.Labels["admitted"] != "" {
		t.Errorf("tracked the object after admission: labels %v", req.Labels)
	}
	if req.Spec.Containers[0].TerminationMessagePath == "" || req.Spec.RestartPolicy == "" {
		t.Errorf("tracked the request undefaulted: %+v", req.Spec)
	}
	if req.Spec.Priority != nil {
		t.Errorf("tracked a defaulted priority %d: it is the Priority plugin's", *req.Spec.Priority)
	}
	got := created.(*corev1.Pod)
	if got.Labels["admitted"] != "yes" || got.Spec.Priority == nil || *got.Spec.Priority != 0 {
		t.Errorf("created pod: labels %v, priority %v; want admission's label and priority 0", got.Labels, got.Spec.Priority)
	}
}

// A namespace's spec.finalizers change through its finalize subresource only: an update
// that drops them keeps them (kube's namespace strategy), so a terminating namespace is not
// purged by a patch; finalize drops them and the namespace goes.
func TestNamespaceFinalizersOnlyThroughFinalize(t *testing.T) {
	s, st, nss := storeWithNamespace(t, "going")
	ctx := t.Context()
	if _, _, err := s.Delete(ctx, nss, "", "going", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	drop := func(cur runtime.Object) (runtime.Object, error) {
		cur.(*corev1.Namespace).Spec.Finalizers = nil
		return cur, nil
	}
	got, err := s.Update(ctx, nss, "", "going", UpdateOptions{}, drop)
	if err != nil {
		t.Fatal(err)
	}
	if f := got.(*corev1.Namespace).Spec.Finalizers; len(f) != 1 || f[0] != corev1.FinalizerKubernetes {
		t.Errorf("finalizers after an update that drops them: %v, want [kubernetes]", f)
	}
	if _, err := st.Get(ctx, Key(nss, "", "going")); err != nil {
		t.Fatalf("the terminating namespace went on an update: %v", err)
	}
	if _, err := s.Update(ctx, nss, "", "going", UpdateOptions{Subresource: "finalize"}, drop); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, Key(nss, "", "going")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the namespace stayed after finalize dropped its finalizers: %v", err)
	}
}

// An update through finalize takes the request's metadata and spec and keeps only the
// stored status, as kube's namespace finalize strategy: its labels are stored too.
func TestNamespaceFinalizeKeepsOnlyTheStatus(t *testing.T) {
	s, _, nss := storeWithNamespace(t, "kept")
	ctx := t.Context()
	got, err := s.Update(ctx, nss, "", "kept", UpdateOptions{Subresource: "finalize"}, func(cur runtime.Object) (runtime.Object, error) {
		ns := cur.(*corev1.Namespace)
		ns.Labels = map[string]string{"finalized": "yes"}
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, "example.com/hold")
		ns.Status.Phase = corev1.NamespaceTerminating
		return ns, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ns := got.(*corev1.Namespace)
	wantLabels := map[string]string{"finalized": "yes", corev1.LabelMetadataName: "kept"}
	if !maps.Equal(ns.Labels, wantLabels) || len(ns.Spec.Finalizers) != 2 || ns.Spec.Finalizers[1] != "example.com/hold" || ns.Status.Phase != corev1.NamespaceActive {
		t.Errorf("after finalize: labels %v, finalizers %v, phase %s; want the request's label (and the name's) and finalizers, the stored phase Active",
			ns.Labels, ns.Spec.Finalizers, ns.Status.Phase)
	}
}

// A built-in kind's finalizer without a domain must be a standard one, checked on create
// and update after the other metadata errors (kube's core ObjectMeta validation); a Lease
// and a RuntimeClass take any, as kube-apiserver checks them with apimachinery's validation
// alone, and so does a core/v1 Event. A Namespace's spec.finalizers are checked too.
func TestFinalizerNames(t *testing.T) {
	s, _ := newTestStore(t, Admission{})
	ctx := t.Context()
	cms := s.resource(t, "configmaps")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default",
		Finalizers: []string{"bad", metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents, "kubernetes", "example.com/ok"}}}
	_, err := s.Create(ctx, cms, cm, CreateOptions{})
	want := `ConfigMap "c" is invalid: [metadata.finalizers: Invalid value: ["bad","orphan","foregroundDeletion","kubernetes","example.com/ok"]: finalizer orphan and foregroundDeletion cannot be both set, ` +
		`metadata.finalizers[0]: Invalid value: "bad": name is neither a standard finalizer name nor is it fully qualified]`
	if err == nil || err.Error() != want {
		t.Errorf("create: %v\nwant %s", err, want)
	}
	cm.Finalizers = []string{"example.com/ok"}
	if _, err := s.Create(ctx, cms, cm, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Update(ctx, cms, "default", "c", UpdateOptions{}, func(cur runtime.Object) (runtime.Object, error) {
		MustMeta(cur).SetFinalizers([]string{"bad"})
		return cur, nil
	})
	if want := `ConfigMap "c" is invalid: metadata.finalizers[0]: Invalid value: "bad": name is neither a standard finalizer name nor is it fully qualified`; err == nil || err.Error() != want {
		t.Errorf("update: %v\nwant %s", err, want)
	}
	// A namespace's spec.finalizers too, with kube's path of the list.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"a/b", "hold"}}}
	const wantNS = `Namespace "n" is invalid: spec.finalizers: Invalid value: "hold": name is neither a standard finalizer name nor is it fully qualified`
	if _, err := s.Create(ctx, s.resource(t, "namespaces"), ns, CreateOptions{}); !apierrors.IsInvalid(err) || err.Error() != wantNS {
		t.Errorf("namespace: %v, want %s", err, wantNS)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "default", Finalizers: []string{"bad"}}}
	leases, ok := s.reg.Lookup(coordinationv1.SchemeGroupVersion.WithResource("leases"))
	if !ok {
		t.Fatal("no leases")
	}
	if _, err := s.Create(ctx, leases, lease, CreateOptions{}); err != nil {
		t.Errorf("a Lease's finalizer without a domain: %v", err)
	}
	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "default", Finalizers: []string{"bad"}},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "default"}}
	if _, err := s.Create(ctx, s.resource(t, "events"), event, CreateOptions{}); err != nil {
		t.Errorf("a core/v1 Event's finalizer without a domain: %v", err)
	}
	runtimeClass := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "rc", Finalizers: []string{"bad"}}, Handler: "runc"}
	runtimeClasses, ok := s.reg.Lookup(nodev1.SchemeGroupVersion.WithResource("runtimeclasses"))
	if !ok {
		t.Fatal("no runtimeclasses")
	}
	if _, err := s.Create(ctx, runtimeClasses, runtimeClass, CreateOptions{}); err != nil {
		t.Errorf("a RuntimeClass's finalizer without a domain: %v", err)
	}
}

// A generated name keeps at most 58 characters of its prefix, as kube's name generator,
// so that the name with its 5 random ones fits a DNS label.
func TestGenerateNameCutsLongPrefixes(t *testing.T) {
	s, _ := newTestStore(t, Admission{})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: strings.Repeat("a", 60) + "-", Namespace: "default"}}
	out, err := s.Create(t.Context(), s.resource(t, "configmaps"), cm, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if name := MustMeta(out).GetName(); len(name) != 63 || !strings.HasPrefix(name, strings.Repeat("a", 58)) {
		t.Errorf("generated name %q (%d characters), want 58 of the prefix and 5 more", name, len(name))
	}
}
