package controlplane

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Deleting a namespace makes it Terminating, refuses new content, deletes what is in it,
// and then the namespace itself goes away.
func TestNamespaceDeletionRemovesContent(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"one", "two"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := c.client.CoreV1().ConfigMaps("team").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A finalizer on one object keeps the namespace Terminating until someone removes it.
	held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}
	if _, err := c.client.CoreV1().ConfigMaps("team").Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	c.mustKubectl(t, "", "delete", "namespace", "team", "--wait=false")
	got, err := c.client.CoreV1().Namespaces().Get(ctx, "team", metav1.GetOptions{})
	if err != nil || got.Status.Phase != corev1.NamespaceTerminating || got.DeletionTimestamp == nil {
		t.Fatalf("namespace should be Terminating: %v %+v", err, got.Status)
	}
	_, err = c.client.CoreV1().ConfigMaps("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("create in a terminating namespace: want Forbidden, got %v", err)
	}
	// What the waits below last saw, told if one of them gives up.
	var left []string
	var last []corev1.NamespaceCondition
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last seen: ConfigMaps %v, namespace conditions %+v", left, last)
		}
	})
	waitFor(t, "content deleted", func() bool {
		list, err := c.client.CoreV1().ConfigMaps("team").List(ctx, metav1.ListOptions{})
		if err != nil {
			left = []string{err.Error()}
			return false
		}
		left = nil
		for _, cm := range list.Items {
			left = append(left, fmt.Sprintf("%s(deleting=%t)", cm.Name, cm.DeletionTimestamp != nil))
		}
		return len(list.Items) == 1 && list.Items[0].Name == "held" && list.Items[0].DeletionTimestamp != nil
	})
	// The namespace controller tells, as kube-controller-manager's does, what holds the
	// namespace in its status conditions (kubectl describe namespace shows them).
	want := map[corev1.NamespaceConditionType]string{
		corev1.NamespaceDeletionDiscoveryFailure: "False ResourcesDiscovered All resources successfully discovered",
		corev1.NamespaceDeletionGVParsingFailure: "False ParsedGroupVersions All legacy kube types successfully parsed",
		corev1.NamespaceDeletionContentFailure:   "False ContentDeleted All content successfully deleted, may be waiting on finalization",
		corev1.NamespaceContentRemaining:         "True SomeResourcesRemain Some resources are remaining: configmaps. has 1 resource instances",
		corev1.NamespaceFinalizersRemaining:      "True SomeFinalizersRemain Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances",
	}
	waitFor(t, "namespace conditions", func() bool {
		got, err := c.client.CoreV1().Namespaces().Get(ctx, "team", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("namespace must wait for the held object: %v", err)
		}
		last = got.Status.Conditions
		if len(last) != len(want) {
			return false
		}
		for _, cond := range last {
			if want[cond.Type] != string(cond.Status)+" "+cond.Reason+" "+cond.Message {
				return false
			}
		}
		return true
	})
	t.Logf("conditions: %+v", last)
	// Deleting it again while its content goes away answers with the namespace as it is,
	// as kube-apiserver has since 1.17 (a 409 before).
	out, err := c.kubectl(t, "", "delete", "namespace", "team", "--wait=false")
	if want := `namespace "team" deleted`; err != nil || !strings.Contains(out, want) {
		t.Errorf("deleting a terminating namespace again: %v\n%s\nwant %s", err, out, want)
	}
	after, err := c.client.CoreV1().Namespaces().Get(ctx, "team", metav1.GetOptions{})
	if err != nil || after.DeletionGracePeriodSeconds != nil || after.Status.Phase != corev1.NamespaceTerminating {
		t.Errorf("namespace after a second deletion: %v %+v, want it Terminating with no grace period", err, after.ObjectMeta)
	}
	cm, err := c.client.CoreV1().ConfigMaps("team").Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Finalizers = nil
	if _, err := c.client.CoreV1().ConfigMaps("team").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "namespace gone", func() bool {
		_, err := c.client.CoreV1().Namespaces().Get(ctx, "team", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// A terminating namespace's pods go first: nothing else is deleted while a pod is left
// (Kubernetes' OrderedNamespaceDeletion), so a pod never outlives its ConfigMaps.
func TestNamespaceDeletionDeletesPodsFirst(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ordered"}}
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The finalizer holds the deleted pod as a pod still terminating on its node would.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/app"}}},
	}
	if _, err := c.client.CoreV1().Pods("ordered").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config"}}
	if _, err := c.client.CoreV1().ConfigMaps("ordered").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := c.client.CoreV1().Namespaces().Delete(ctx, "ordered", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Once the controller tells that the pod remains it has been through the namespace.
	waitFor(t, "pod remaining", func() bool {
		got, err := c.client.CoreV1().Namespaces().Get(ctx, "ordered", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == corev1.NamespaceContentRemaining && strings.Contains(cond.Message, "pods. has 1 resource instances") {
				return true
			}
		}
		return false
	})
	got, err := c.client.CoreV1().ConfigMaps("ordered").Get(ctx, "config", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp != nil {
		t.Fatalf("the ConfigMap must stay while a pod is left: %v, deletionTimestamp %v", err, got.GetDeletionTimestamp())
	}

	p, err := c.client.CoreV1().Pods("ordered").Get(ctx, "held", metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("the pod should be deleted first: %v %+v", err, p.GetDeletionTimestamp())
	}
	p.Finalizers = nil
	if _, err := c.client.CoreV1().Pods("ordered").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "namespace gone", func() bool {
		_, err := c.client.CoreV1().Namespaces().Get(ctx, "ordered", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
