package controllerref_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/internal/controller/controllerref"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// TestClaimAgainstMiniapi adopts a matching orphan, releases a non-matching child, and
// refuses to adopt a namesake: the orphan it saw was deleted and created again (new uid)
// before the adoption patch, which miniapi must refuse as kube-apiserver does.
func TestClaimAgainstMiniapi(t *testing.T) {
	cl := controlplanetest.Start(t, nil)
	ctx := context.Background()
	cms := cl.Client.CoreV1().ConfigMaps("default")
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kind := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	mk := func(name, app string, refs ...metav1.OwnerReference) *corev1.ConfigMap {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}, OwnerReferences: refs}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	orphan := mk("orphan", "x")
	child := mk("child", "y", *metav1.NewControllerRef(owner, kind))
	stale := mk("stale", "x")
	if err := cms.Delete(ctx, "stale", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	mk("stale", "x")
	patch := func(ctx context.Context, cm *corev1.ConfigMap, body []byte) error {
		_, err := cms.Patch(ctx, cm.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{})
		return err
	}
	sel := labels.SelectorFromSet(labels.Set{"app": "x"})
	owned, err := controllerref.Claim(ctx, owner, kind, cms.Get, sel, []*corev1.ConfigMap{orphan, child}, patch)
	if err != nil || len(owned) != 1 || owned[0].Name != "orphan" {
		t.Fatalf("Claim = %v, %v; want the orphan only", owned, err)
	}
	got, _ := cms.Get(ctx, "orphan", metav1.GetOptions{})
	if ref := metav1.GetControllerOf(got); ref == nil || ref.UID != owner.UID {
		t.Errorf("orphan not adopted: %v", got.OwnerReferences)
	}
	got, _ = cms.Get(ctx, "child", metav1.GetOptions{})
	if len(got.OwnerReferences) != 0 {
		t.Errorf("non-matching child not released: %v", got.OwnerReferences)
	}
	_, err = controllerref.Claim(ctx, owner, kind, cms.Get, sel, []*corev1.ConfigMap{stale}, patch)
	if msg := fmt.Sprint(err); !strings.Contains(msg, `ConfigMap "stale" is invalid: metadata.uid`) {
		t.Fatalf("adopting a recreated namesake: err %v, want kube's 422 (a patch may not change the uid)", err)
	}

	// With finalizers (the Job's tracking finalizer): added on adoption beside the
	// object's own, removed on release with the reference.
	const f = "example.com/tracking"
	orphan2 := mk("orphan2", "x")
	child2 := mk("child2", "y", *metav1.NewControllerRef(owner, kind))
	if _, err = cms.Patch(ctx, "child2", types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/own","`+f+`"]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := controllerref.Claim(ctx, owner, kind, cms.Get, sel, []*corev1.ConfigMap{orphan2, child2}, patch, f); err != nil {
		t.Fatal(err)
	}
	if got, _ := cms.Get(ctx, "orphan2", metav1.GetOptions{}); len(got.Finalizers) != 1 || got.Finalizers[0] != f || metav1.GetControllerOf(got) == nil {
		t.Errorf("adopted with finalizers %v, references %v; want [%s] and the owner", got.Finalizers, got.OwnerReferences, f)
	}
	if got, _ := cms.Get(ctx, "child2", metav1.GetOptions{}); len(got.Finalizers) != 1 || got.Finalizers[0] != "example.com/own" || len(got.OwnerReferences) != 0 {
		t.Errorf("released with finalizers %v, references %v; want [example.com/own] and none", got.Finalizers, got.OwnerReferences)
	}
	for _, name := range []string{"orphan2", "child2"} { // let the cluster's teardown delete them
		if _, err := cms.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestControlled keeps the objects whose controller is the owner, in order: not those
// another controls, nor those the owner only owns without controlling.
func TestControlled(t *testing.T) {
	owner := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "owner", UID: "owner-uid"}}
	ownedBy := func(name string, uid types.UID, controller bool) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Pod", Name: "x", UID: uid, Controller: &controller}}}}
	}
	objs := []*corev1.Pod{ownedBy("a", owner.UID, true), ownedBy("other", "other-uid", true), ownedBy("plain", owner.UID, false),
		{ObjectMeta: metav1.ObjectMeta{Name: "orphan"}}, ownedBy("b", owner.UID, true)}
	var got []string
	for _, p := range controllerref.Controlled(objs, owner.UID) {
		got = append(got, p.Name)
	}
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("Controlled = %v, want [a b]", got)
	}
}

// podOf is a pod of app in owner's namespace, controlled by owner when controlled.
func podOf(owner *corev1.Pod, name, app string, controlled bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: owner.Namespace, Name: name, UID: types.UID(name), Labels: map[string]string{"app": app}}}
	if controlled {
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, corev1.SchemeGroupVersion.WithKind("Pod"))}
	}
	return p
}

// TestClaimReleasesNothingWhileTheOwnerIsDeleted: as kube's ClaimObject, an owner being
// deleted neither adopts nor releases; what it controls and still selects stays its own.
func TestClaimReleasesNothingWhileTheOwnerIsDeleted(t *testing.T) {
	now := metav1.Now()
	owner := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "owner", UID: "owner-uid", DeletionTimestamp: &now}}
	kind := corev1.SchemeGroupVersion.WithKind("Pod")
	var patched []string
	patch := func(_ context.Context, p *corev1.Pod, _ []byte) error {
		patched = append(patched, p.Name)
		return nil
	}
	get := func(context.Context, string, metav1.GetOptions) (*corev1.Pod, error) {
		t.Error("an owner being deleted read again")
		return owner, nil
	}
	owned, err := controllerref.Claim(context.Background(), owner, kind, get, labels.SelectorFromSet(labels.Set{"app": "x"}),
		[]*corev1.Pod{podOf(owner, "kept", "x", true), podOf(owner, "unmatched", "y", true), podOf(owner, "orphan", "x", false)}, patch)
	var names []string
	for _, p := range owned {
		names = append(names, p.Name)
	}
	if err != nil || len(names) != 1 || names[0] != "kept" || len(patched) != 0 {
		t.Errorf("Claim = %v, %v, patched %v; want [kept] and no patch", names, err, patched)
	}
}

// TestClaimRechecksTheOwnerBeforeAdopting: as kube's RecheckDeletionTimestamp, the owner
// is read once from the API (past the cache) before the first adoption and only then; an
// owner deleted or made again meanwhile adopts nothing, while releasing goes on.
func TestClaimRechecksTheOwnerBeforeAdopting(t *testing.T) {
	kind := corev1.SchemeGroupVersion.WithKind("Pod")
	owner := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owner", UID: "owner-uid"}}
	now := metav1.Now()
	for _, tc := range []struct {
		name    string
		fresh   *corev1.Pod
		getErr  error
		objs    []*corev1.Pod
		gets    int
		owned   []string
		patched []string
		err     string
	}{
		{name: "nothing to adopt", objs: []*corev1.Pod{podOf(owner, "kept", "x", true), podOf(owner, "other", "y", false)},
			owned: []string{"kept"}},
		{name: "owner as cached", fresh: owner, objs: []*corev1.Pod{podOf(owner, "a", "x", false), podOf(owner, "b", "x", false)},
			gets: 1, owned: []string{"a", "b"}, patched: []string{"a", "b"}},
		{name: "owner just deleted", fresh: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owner", UID: "owner-uid", DeletionTimestamp: &now}},
			objs: []*corev1.Pod{podOf(owner, "a", "x", false), podOf(owner, "unmatched", "y", true), podOf(owner, "b", "x", false)},
			gets: 1, patched: []string{"unmatched"}, err: "can't adopt Pod ns/a (a): ns/owner has just been deleted at"},
		{name: "owner made again", fresh: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owner", UID: "new-uid"}},
			objs: []*corev1.Pod{podOf(owner, "a", "x", false)},
			gets: 1, err: "can't adopt Pod ns/a (a): can't recheck DeletionTimestamp: original Pod ns/owner is gone: got uid new-uid, wanted owner-uid"},
		{name: "owner gone", getErr: apierrors.NewNotFound(corev1.Resource("pods"), "owner"),
			objs: []*corev1.Pod{podOf(owner, "a", "x", false)},
			gets: 1, err: `can't adopt Pod ns/a (a): can't recheck DeletionTimestamp: pods "owner" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gets := 0
			get := func(_ context.Context, name string, _ metav1.GetOptions) (*corev1.Pod, error) {
				gets++
				if name != owner.Name {
					t.Errorf("got %q, want the owner", name)
				}
				return tc.fresh, tc.getErr
			}
			var patched []string
			patch := func(_ context.Context, p *corev1.Pod, _ []byte) error {
				patched = append(patched, p.Name)
				return nil
			}
			owned, err := controllerref.Claim(context.Background(), owner, kind, get, labels.SelectorFromSet(labels.Set{"app": "x"}), tc.objs, patch)
			var names []string
			for _, p := range owned {
				names = append(names, p.Name)
			}
			if gotErr := fmt.Sprint(err); tc.err == "" && err != nil || tc.err != "" && !strings.Contains(gotErr, tc.err) {
				t.Errorf("err = %v, want %q", err, tc.err)
			}
			if !slices.Equal(names, tc.owned) || !slices.Equal(patched, tc.patched) || gets != tc.gets {
				t.Errorf("owned %v, patched %v, %d gets; want %v, %v, %d", names, patched, gets, tc.owned, tc.patched, tc.gets)
			}
		})
	}
}

// TestClaimGoesOnPastAnError: as kube's ClaimPods, a failed adoption or release does not
// stop the others; the errors come back together with what was claimed.
func TestClaimGoesOnPastAnError(t *testing.T) {
	kind := corev1.SchemeGroupVersion.WithKind("Pod")
	owner := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owner", UID: "owner-uid"}}
	get := func(context.Context, string, metav1.GetOptions) (*corev1.Pod, error) { return owner, nil }
	var patched []string
	patch := func(_ context.Context, p *corev1.Pod, _ []byte) error {
		patched = append(patched, p.Name)
		if strings.HasPrefix(p.Name, "bad") {
			return errors.New("conflict on " + p.Name)
		}
		return nil
	}
	objs := []*corev1.Pod{podOf(owner, "bad-adopt", "x", false), podOf(owner, "bad-release", "y", true), podOf(owner, "kept", "x", true), podOf(owner, "adopted", "x", false)}
	owned, err := controllerref.Claim(context.Background(), owner, kind, get, labels.SelectorFromSet(labels.Set{"app": "x"}), objs, patch)
	var names []string
	for _, p := range owned {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"kept", "adopted"}) || !slices.Equal(patched, []string{"bad-adopt", "bad-release", "adopted"}) {
		t.Errorf("owned %v, patched %v; want [kept adopted], [bad-adopt bad-release adopted]", names, patched)
	}
	if msg := fmt.Sprint(err); !strings.Contains(msg, "conflict on bad-adopt") || !strings.Contains(msg, "conflict on bad-release") {
		t.Errorf("err = %v, want both failures", err)
	}
}
