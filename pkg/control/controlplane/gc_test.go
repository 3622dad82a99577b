package controlplane

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// kubectl delete --cascade=background|foreground|orphan on an owner with dependents: config
// maps, which the collector watches through metadata informers, and a pod, which it watches
// through the scheduler's typed informer.
func TestCascadingDeletion(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	cms := c.client.CoreV1().ConfigMaps("default")
	pods := c.client.CoreV1().Pods("default")
	ownerWithDependents := func(owner string, n int) {
		o, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: owner}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// blockOwnerDeletion, as controllers set it: only such dependents hold an owner
		// deleted in the foreground.
		ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner, UID: o.UID, BlockOwnerDeletion: ptr.To(true)}
		for i := 0; i < n; i++ {
			dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: owner + "-dep-" + string(rune('a'+i)), OwnerReferences: []metav1.OwnerReference{ref}}}
			if _, err := cms.Create(ctx, dep, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: owner + "-pod", OwnerReferences: []metav1.OwnerReference{ref}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
		}
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	gone := func(name string) bool {
		_, err := cms.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}
	podGone := func(name string) bool {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}

	ownerWithDependents("bg", 2)
	c.mustKubectl(t, "", "delete", "cm", "bg", "--cascade=background")
	waitFor(t, "background: dependents collected", func() bool {
		return gone("bg") && gone("bg-dep-a") && gone("bg-dep-b") && podGone("bg-pod")
	})

	ownerWithDependents("fg", 2)
	// kubectl waits for the owner, which foreground deletion removes only after its dependents.
	start := time.Now()
	c.mustKubectl(t, "", "delete", "cm", "fg", "--cascade=foreground", "--timeout=30s")
	t.Logf("foreground took %v", time.Since(start))
	if !gone("fg") || !gone("fg-dep-a") || !gone("fg-dep-b") || !podGone("fg-pod") {
		t.Errorf("foreground: owner and dependents should all be gone")
	}

	ownerWithDependents("or", 2)
	c.mustKubectl(t, "", "delete", "cm", "or", "--cascade=orphan", "--timeout=30s")
	waitFor(t, "orphan: owner gone", func() bool { return gone("or") })
	for _, name := range []string{"or-dep-a", "or-dep-b"} {
		dep, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil || len(dep.OwnerReferences) != 0 {
			t.Errorf("orphan: %s should remain without its owner reference: %v %+v", name, err, dep)
		}
	}
	if pod, err := pods.Get(ctx, "or-pod", metav1.GetOptions{}); err != nil || len(pod.OwnerReferences) != 0 {
		t.Errorf("orphan: or-pod should remain without its owner reference: %v %+v", err, pod)
	}

	// A dependent created after its owner is gone is collected too.
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: "no-such-uid"}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stray", OwnerReferences: []metav1.OwnerReference{ref}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "dependent of a missing owner collected", func() bool { return gone("stray") })
}
