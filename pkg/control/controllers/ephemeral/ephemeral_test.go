package ephemeral_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
)

// The test works in a namespace of its own, whose default ServiceAccount Shared waits for
// (a pod created before it exists is refused).
func TestMain(m *testing.M) { controlplanetest.Main(m) }

func ephemeralPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "localhost/minik8s/busybox:v1"}},
		Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"type": "scratch"}, Annotations: map[string]string{"note": "x"}},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			}}}}},
	}}
}

// TestEphemeralVolumeClaims: a pod with a generic ephemeral volume gets its claim
// POD-VOLUME, made from the template and owned (controller, blockOwnerDeletion) by the
// pod, as kube-controller-manager's ephemeral-volume controller makes it; a claim of that
// name the pod does not own is left alone and the pod gets the controller's Warning.
func TestEphemeralVolumeClaims(t *testing.T) {
	c := controlplanetest.Shared(t)
	ns := c.Namespace
	ctx := context.Background()
	pod, err := c.Client.CoreV1().Pods(ns).Create(ctx, ephemeralPod("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pvc *corev1.PersistentVolumeClaim
	controllertest.Until(t, "a claim web-scratch for the pod's ephemeral volume", 10*time.Second, func() bool {
		pvc, err = c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "web-scratch", metav1.GetOptions{})
		return err == nil
	})
	if refs := pvc.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Pod" || refs[0].APIVersion != "v1" || refs[0].Name != "web" ||
		refs[0].UID != pod.UID || refs[0].Controller == nil || !*refs[0].Controller || refs[0].BlockOwnerDeletion == nil || !*refs[0].BlockOwnerDeletion {
		t.Errorf("claim's owners %+v, want the pod as controller", refs)
	}
	if pvc.Labels["type"] != "scratch" || pvc.Annotations["note"] != "x" || pvc.Spec.Resources.Requests.Storage().String() != "1Gi" {
		t.Errorf("claim %+v, want the template's labels, annotations and spec", pvc.ObjectMeta)
	}

	other := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "db-scratch"}, Spec: pvc.Spec}
	if _, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, ephemeralPod("db"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("ephemeral volume scratch: PVC %s/db-scratch was not created for pod %s/db (pod is not owner)", ns, ns)
	controllertest.WaitFor(t, fmt.Sprintf("pod db's Warning FailedBinding %q", want), 10*time.Second, func() (bool, string) {
		events, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "db").String()})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == "FailedBinding" && e.Message == want && e.Source.Component == "ephemeral_volume" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", events.Items)
	})
}
