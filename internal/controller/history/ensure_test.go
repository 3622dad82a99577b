package history

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
)

var dsKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// ensure runs Ensure for ds with image as its template, the lister fed from the fake
// client's revisions (as an informer would be), and returns the revisions left by name.
func ensure(t *testing.T, client *fake.Clientset, ds *appsv1.DaemonSet, image string, live map[string]bool, liveCounts bool) map[string]appsv1.ControllerRevision {
	t.Helper()
	ctx := context.Background()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	list, err := client.AppsV1().ControllerRevisions(ds.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if err := indexer.Add(&list.Items[i]); err != nil {
			t.Fatal(err)
		}
	}
	ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: image}}
	owner, err := NewOwner(ds, dsKind, &ds.Spec.Template, nil, ds.Spec.RevisionHistoryLimit)
	if err != nil {
		t.Fatal(err)
	}
	owner.Live, owner.LiveCounts = live, liveCounts
	if _, _, err := Ensure(ctx, client, appslisters.NewControllerRevisionLister(indexer), owner); err != nil {
		t.Fatal(err)
	}
	list, err = client.AppsV1().ControllerRevisions(ds.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]appsv1.ControllerRevision{}
	for _, r := range list.Items {
		out[r.Labels[HashLabel]] = r
	}
	return out
}

// images lists the image of every revision left, by revision number.
func images(t *testing.T, revs map[string]appsv1.ControllerRevision) string {
	var out []string
	for _, r := range revs {
		i := strings.Index(string(r.Data.Raw), `"image":"`)
		out = append(out, fmt.Sprintf("%d:%s", r.Revision, strings.SplitN(string(r.Data.Raw[i+9:]), `"`, 2)[0]))
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) < len(out[j]) || len(out[i]) == len(out[j]) && out[i] < out[j] })
	return strings.Join(out, " ")
}

// TestRevisionCarriesOwnerAnnotations: as kube's daemonset and statefulset controllers, a
// new revision copies its owner's annotations, so `kubectl rollout history ds/x` shows the
// kubernetes.io/change-cause the set had when its template changed.
func TestRevisionCarriesOwnerAnnotations(t *testing.T) {
	client := fake.NewClientset()
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", UID: "u1",
		Annotations: map[string]string{"kubernetes.io/change-cause": "first"}}}
	ensure(t, client, ds, "one", nil, false)
	ds.Annotations["kubernetes.io/change-cause"] = "second"
	revs := ensure(t, client, ds, "two", nil, false)
	var causes []string
	for _, r := range revs {
		causes = append(causes, fmt.Sprintf("%d:%s", r.Revision, r.Annotations["kubernetes.io/change-cause"]))
	}
	sort.Strings(causes)
	if got := strings.Join(causes, " "); got != "1:first 2:second" {
		t.Errorf("change-cause of the revisions: %q, want %q", got, "1:first 2:second")
	}
}

// TestPruneSparesLiveRevisions: revisions that pods still run are never pruned. A
// DaemonSet's (kube's cleanupHistory) count against revisionHistoryLimit; a
// StatefulSet's (truncateHistory) do not.
func TestPruneSparesLiveRevisions(t *testing.T) {
	for _, tc := range []struct {
		name       string
		liveCounts bool
		want       string
	}{
		{"DaemonSet", true, "1:a 4:d"},
		{"StatefulSet", false, "1:a 3:c 4:d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", UID: "u1"},
				Spec: appsv1.DaemonSetSpec{RevisionHistoryLimit: new(int32)}}
			*ds.Spec.RevisionHistoryLimit = 1
			first := ensure(t, client, ds, "a", nil, tc.liveCounts)
			var hashA string
			for h := range first {
				hashA = h
			}
			live := map[string]bool{hashA: true} // a pod still runs the first template
			ensure(t, client, ds, "b", live, tc.liveCounts)
			ensure(t, client, ds, "c", live, tc.liveCounts)
			if got := images(t, ensure(t, client, ds, "d", live, tc.liveCounts)); got != tc.want {
				t.Errorf("revisions left %q, want %q", got, tc.want)
			}
		})
	}
}

// A revision whose data is the template's is the template's revision whatever its name and
// hash label, as kube's controllers find it (StatefulSet FindEqualRevisions, DaemonSet
// Match): a set whose revisions were named otherwise (by an older minik8s) rolls nothing.
func TestEnsureFindsTheRevisionByItsData(t *testing.T) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ds", Namespace: "ns", UID: "u1"}}
	ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "one"}}
	data, err := Patch(&ds.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	old := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "ds-old", Namespace: "ns", Labels: map[string]string{HashLabel: "old"},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, dsKind)}}, Data: runtime.RawExtension{Raw: data}, Revision: 1}
	client := fake.NewClientset(old)
	revs := ensure(t, client, ds, "one", nil, false)
	if len(revs) != 1 || revs["old"].Name != "ds-old" {
		t.Errorf("revisions %v, want only ds-old", slices.Collect(maps.Keys(revs)))
	}
}

// TestEnsureReportsAHashCollision: a revision of the template's name that holds another
// template is a hash collision (kube's CreateControllerRevision and daemonset snapshot):
// Ensure says so, for the owner to bump its collisionCount, and does not take the other
// template's revision as its own. One with the template's data, which the cache had not
// shown yet, is the template's revision.
func TestEnsureReportsAHashCollision(t *testing.T) {
	ctx := context.Background()
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "ds", Namespace: "ns", UID: "u1"}}
	ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "one"}}
	owner, err := NewOwner(ds, dsKind, &ds.Spec.Template, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	emptyLister := appslisters.NewControllerRevisionLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}))
	namesake := func(data []byte) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "ds-" + owner.Hash, Namespace: "ns",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, dsKind)}}, Data: runtime.RawExtension{Raw: data}, Revision: 1}
	}

	other := fake.NewClientset(namesake([]byte(`{"spec":{"template":{"$patch":"replace"}}}`)))
	if _, _, err := Ensure(ctx, other, emptyLister, owner); !errors.Is(err, ErrHashCollision) {
		t.Errorf("a namesake revision with another template: error %v, want %v", err, ErrHashCollision)
	}

	same := fake.NewClientset(namesake(owner.Data))
	current, _, err := Ensure(ctx, same, emptyLister, owner)
	if err != nil || current.Name != "ds-"+owner.Hash {
		t.Errorf("a namesake revision with the template, not yet in the cache: %v, %v; want it taken", current, err)
	}
}
