package garbagecollector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

func ownedBy(owners ...*corev1.ConfigMap) []metav1.OwnerReference {
	var refs []metav1.OwnerReference
	for _, o := range owners {
		refs = append(refs, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: o.Name, UID: o.UID, BlockOwnerDeletion: ptr.To(true)})
	}
	return refs
}

func createConfigMap(t *testing.T, client kubernetes.Interface, ns, name string, owners ...*corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	cm, err := client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: ownedBy(owners...)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func deleteInForeground(t *testing.T, client kubernetes.Interface, cm *corev1.ConfigMap) {
	t.Helper()
	err := client.CoreV1().ConfigMaps(cm.Namespace).Delete(context.Background(), cm.Name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationForeground), Preconditions: metav1.NewUIDPreconditions(string(cm.UID))})
	if err != nil {
		t.Fatal(err)
	}
}

// waitGone waits until none of the named config maps of ns exists: a minute, two of the
// collector's discovery periods.
func waitGone(t *testing.T, client kubernetes.Interface, ns string, names ...string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			if _, err := client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%v still exist after a minute: %v", names, err)
	}
}

// The tests share the package's miniapi, each in a namespace of its own, and run in
// parallel: most of their time is waiting for the collector.
func TestMain(m *testing.M) { controlplanetest.Main(m) }

// TestForegroundDeletionOfCycle: deleting in the foreground one object of an ownership
// cycle whose references all block their owner's deletion deletes the whole cycle, instead
// of each object waiting for the next forever (conformance: "should not be blocked by
// dependency circle").
func TestForegroundDeletionOfCycle(t *testing.T) {
	t.Parallel()
	c := controlplanetest.Shared(t)
	cm1 := createConfigMap(t, c.Client, c.Namespace, "cycle-1")
	cm2 := createConfigMap(t, c.Client, c.Namespace, "cycle-2", cm1)
	cm3 := createConfigMap(t, c.Client, c.Namespace, "cycle-3", cm2)
	patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":%q,"uid":%q,"blockOwnerDeletion":true}]}}`, cm3.Name, cm3.UID)
	cm1, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Patch(context.Background(), cm1.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleteInForeground(t, c.Client, cm1)
	waitGone(t, c.Client, c.Namespace, cm1.Name, cm2.Name, cm3.Name)
}

// TestForegroundDeletionKeepsDependentsWithAnotherOwner: an owner deleted in the foreground
// takes the dependents only it owns; one that has another, valid owner stays and loses only
// its reference to the deleted owner (conformance: "should not delete dependents that have
// both valid owner and owner that's waiting for dependents to be deleted").
func TestForegroundDeletionKeepsDependentsWithAnotherOwner(t *testing.T) {
	t.Parallel()
	c := controlplanetest.Shared(t)
	ctx := context.Background()
	going := createConfigMap(t, c.Client, c.Namespace, "going")
	staying := createConfigMap(t, c.Client, c.Namespace, "staying")
	var onlyGoing, both []string
	for i := 0; i < 3; i++ {
		onlyGoing = append(onlyGoing, createConfigMap(t, c.Client, c.Namespace, fmt.Sprintf("only-going-%d", i), going).Name)
		both = append(both, createConfigMap(t, c.Client, c.Namespace, fmt.Sprintf("both-%d", i), going, staying).Name)
	}
	deleteInForeground(t, c.Client, going)
	waitGone(t, c.Client, c.Namespace, append(onlyGoing, going.Name)...)
	for _, name := range both {
		cm, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("dependent %s with a valid owner: %v", name, err)
		}
		if cm.DeletionTimestamp != nil {
			t.Errorf("dependent %s with a valid owner is being deleted", name)
		}
		if refs := cm.OwnerReferences; len(refs) != 1 || refs[0].UID != staying.UID {
			t.Errorf("dependent %s has owner references %+v; want only the one to %s", name, refs, staying.Name)
		}
	}
}
