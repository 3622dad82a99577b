package garbagecollector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestOwnerInAnotherNamespace: an owner reference names an owner in the dependent's own
// namespace; one whose UID is an object of another namespace is dangling, so the dependent
// is deleted, with kube's OwnerRefInvalidNamespace Warning Event on it.
func TestOwnerInAnotherNamespace(t *testing.T) {
	t.Parallel()
	c := controlplanetest.Shared(t)
	ctx := context.Background()
	other := c.Namespace + "-owners"
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner := createConfigMap(t, c.Client, other, "owner")
	dep := createConfigMap(t, c.Client, c.Namespace, "dependent", owner)
	waitGone(t, c.Client, c.Namespace, dep.Name)
	want := fmt.Sprintf(`ownerRef [v1/ConfigMap, namespace: %s, name: owner, uid: %s] does not exist in namespace %q`, c.Namespace, owner.UID, c.Namespace)
	var got []string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := c.Client.CoreV1().Events(c.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=dependent,reason=OwnerRefInvalidNamespace"})
		if err != nil {
			return false, err
		}
		got = nil
		for _, e := range events.Items {
			got = append(got, e.Type+" "+e.Source.Component+" "+e.InvolvedObject.Kind+" "+e.Message)
			if e.Type == corev1.EventTypeWarning && e.Source.Component == "garbage-collector-controller" && e.InvolvedObject.Kind == "ConfigMap" && e.Message == want {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no OwnerRefInvalidNamespace event %q: %v (events %q)", want, err, got)
	}
	if _, err := c.Client.CoreV1().ConfigMaps(other).Get(ctx, owner.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the owner in the other namespace: %v", err)
	}
}

// TestClusterScopedDependentOfNamespacedOwner: a cluster-scoped object cannot be owned by a
// namespaced one; the collector leaves such a reference alone (kube: it is never found
// absent) rather than deleting the object, while a cluster-scoped dependent of an absent
// cluster-scoped owner goes.
func TestClusterScopedDependentOfNamespacedOwner(t *testing.T) {
	t.Parallel()
	c := controlplanetest.Shared(t)
	ctx := context.Background()
	role := func(name, kind string) {
		t.Helper()
		_, err := c.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: kind, Name: "absent", UID: "4d8a3f0e-0000-4000-8000-000000000001"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	kept, gone := c.Namespace+"-of-configmap", c.Namespace+"-of-namespace"
	role(kept, "ConfigMap")
	role(gone, "Namespace")
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.Client.RbacV1().ClusterRoles().Get(ctx, gone, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("cluster role owned by an absent namespace not collected: %v", err)
	}
	time.Sleep(time.Second)
	if r, err := c.Client.RbacV1().ClusterRoles().Get(ctx, kept, metav1.GetOptions{}); err != nil || r.DeletionTimestamp != nil {
		t.Errorf("cluster role naming a namespaced owner: %v (being deleted: %v)", err, err == nil && r.DeletionTimestamp != nil)
	}
	_ = c.Client.RbacV1().ClusterRoles().Delete(ctx, kept, metav1.DeleteOptions{})
}

// TestClusterScopedDependentOfExistingNamespacedOwner: a cluster-scoped object naming a
// namespaced owner that exists is kept, and told with kube's OwnerRefInvalidNamespace
// Warning (its graph builder reports it on seeing both), in the default namespace.
func TestClusterScopedDependentOfExistingNamespacedOwner(t *testing.T) {
	t.Parallel()
	c := controlplanetest.Shared(t)
	ctx := context.Background()
	owner := createConfigMap(t, c.Client, c.Namespace, "owner")
	name := c.Namespace + "-of-existing-configmap"
	_, err := c.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{}) })
	want := fmt.Sprintf(`ownerRef [v1/ConfigMap, namespace: , name: owner, uid: %s] does not exist in namespace ""`, owner.UID)
	var got []string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := c.Client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=OwnerRefInvalidNamespace"})
		if err != nil {
			return false, err
		}
		got = nil
		for _, e := range events.Items {
			got = append(got, e.Type+" "+e.InvolvedObject.Kind+" "+e.Message)
			if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Kind == "ClusterRole" && e.Message == want {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no OwnerRefInvalidNamespace event %q: %v (events %q)", want, err, got)
	}
	if r, err := c.Client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil || r.DeletionTimestamp != nil {
		t.Errorf("cluster role naming a namespaced owner: %v (being deleted: %v)", err, err == nil && r.DeletionTimestamp != nil)
	}
}
