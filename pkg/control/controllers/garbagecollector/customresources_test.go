package garbagecollector_test

import (
	"context"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// TestOwnersOfKindsDefinedLater: the collector learns the kinds of CRDs created after it
// started (kube's collector reads discovery again every 30 s). Until it knows a kind it
// keeps the dependents of owners of that kind, as kube's does (its comment: "to prevent
// objects having references to an old resource from being deleted during a cluster
// upgrade"); then a dependent of an absent custom resource goes, one of a present one stays
// until its owner is deleted, and one whose owner is of a kind no server serves stays.
func TestOwnersOfKindsDefinedLater(t *testing.T) {
	t.Parallel()
	c := controlplanetest.Shared(t)
	ctx := context.Background()
	group := c.Namespace + ".gc.example.com"
	widgets := c.CreateCRD(t, group, "widgets", "Widget", apiextensionsv1.NamespaceScoped, nil).Namespace(c.Namespace)
	owner, err := widgets.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Widget", "metadata": map[string]any{"name": "w1"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create a widget: %v", err)
	}
	dependent := func(name, apiVersion, kind string, uid types.UID) {
		t.Helper()
		_, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "w1", UID: uid}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	dependent("of-present", group+"/v1", "Widget", owner.GetUID())
	dependent("of-absent", group+"/v1", "Widget", "4d8a3f0e-0000-4000-8000-0000000000a1")
	dependent("of-unknown-kind", "nowhere.example.com/v1", "Widget", "4d8a3f0e-0000-4000-8000-0000000000a2")

	waitGone(t, c.Client, c.Namespace, "of-absent") // the period's 30 s, then the back-off's step
	exists := func(names ...string) {
		t.Helper()
		for _, name := range names {
			if cm, err := c.Client.CoreV1().ConfigMaps(c.Namespace).Get(ctx, name, metav1.GetOptions{}); err != nil || cm.DeletionTimestamp != nil {
				t.Errorf("%s: %v (being deleted: %v)", name, err, err == nil && cm.DeletionTimestamp != nil)
			}
		}
	}
	exists("of-present", "of-unknown-kind")

	if err := widgets.Delete(ctx, "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c.Client, c.Namespace, "of-present")
	exists("of-unknown-kind")
}
