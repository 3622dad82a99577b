package daemonset

import (
	"context"
	"testing"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/internal/controller/history"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
)

// agentSet is the DaemonSet "agent" selecting app=agent, of one container.
func agentSet(uid types.UID) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", UID: uid},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}}}
	ds.Spec.Template.Labels = map[string]string{"app": "agent"}
	ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox"}}
	return ds
}

// controllerWith is a Controller over the node n1 whose listers show ds, pods and revs and
// whose client holds them.
func controllerWith(ds *appsv1.DaemonSet, pods []*corev1.Pod, revs []*appsv1.ControllerRevision) (*Controller, *fake.Clientset) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	w := controllertest.NewWorkload([]runtime.Object{ds, node}, pods, revs)
	return &Controller{client: w.Client, recorder: record.NewFakeRecorder(10), pending: map[string]int{},
		sets: appslisters.NewDaemonSetLister(controllertest.Indexer(ds)), revisions: w.Revisions,
		pods: w.Pods, nodes: corelisters.NewNodeLister(controllertest.Indexer(node))}, w.Client
}

// TestClaimAdoptsAndReleases: as kube's getDaemonPods (ClaimPods) and controlledHistories
// (ClaimControllerRevisions), a DaemonSet releases the pod and the revision it controls
// that its selector no longer matches (a user relabelled them), starts a replacement on
// the released pod's node, and adopts the orphaned revision it matches.
func TestClaimAdoptsAndReleases(t *testing.T) {
	ds := agentSet("u3")
	owner, err := history.NewOwner(ds, kind, &ds.Spec.Template, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	relabelled := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent-x", Namespace: "ns", UID: "p0",
		Labels:          map[string]string{"app": "debug", appsv1.DefaultDaemonSetUniqueLabelKey: owner.Hash},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, kind)}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: ds.Spec.Template.Spec.Containers}}
	orphanRev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "agent-" + owner.Hash, Namespace: "ns", UID: "r1",
		Labels: map[string]string{"app": "agent", history.HashLabel: owner.Hash}}, Data: runtime.RawExtension{Raw: owner.Data}, Revision: 1}
	relabelledRev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "agent-old", Namespace: "ns", UID: "r2",
		Labels: map[string]string{"app": "debug"}, OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, kind)}},
		Data: runtime.RawExtension{Raw: []byte(`{}`)}, Revision: 2}
	c, client := controllerWith(ds, []*corev1.Pod{relabelled}, []*appsv1.ControllerRevision{orphanRev, relabelledRev})
	if _, err := c.sync(context.Background(), "ns/agent"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pods, err := client.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	controlled := 0
	for _, p := range pods.Items {
		switch {
		case p.Name == relabelled.Name && metav1.GetControllerOf(&p) != nil:
			t.Errorf("relabelled pod still controlled: %v", p.OwnerReferences)
		case metav1.IsControlledBy(&p, ds):
			controlled++
		}
	}
	if controlled != 1 {
		t.Errorf("%d pods of the DaemonSet besides the released one, want 1 replacement", controlled)
	}
	for _, tc := range []struct {
		name string
		want bool
	}{{orphanRev.Name, true}, {relabelledRev.Name, false}} {
		rev, err := client.AppsV1().ControllerRevisions("ns").Get(ctx, tc.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := metav1.IsControlledBy(rev, ds); got != tc.want {
			t.Errorf("revision %s controlled %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestDeletedDaemonSetIsLeftAlone: as kube's syncDaemonSet, a DaemonSet being deleted (its
// pods going with --cascade=foreground, or orphaned) gets no pods, no revisions and no
// status: the garbage collector's work is not undone.
func TestDeletedDaemonSetIsLeftAlone(t *testing.T) {
	now := metav1.Now()
	ds := agentSet("u4")
	ds.Generation, ds.DeletionTimestamp, ds.Finalizers = 3, &now, []string{metav1.FinalizerDeleteDependents}
	c, client := controllerWith(ds, nil, nil)
	if _, err := c.sync(context.Background(), "ns/agent"); err != nil {
		t.Fatal(err)
	}
	var writes []string
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			writes = append(writes, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	if len(writes) != 0 {
		t.Errorf("writes for a DaemonSet being deleted: %v, want none", writes)
	}
}
