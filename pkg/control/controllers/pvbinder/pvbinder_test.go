package pvbinder_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func volume(name, size, class string, policy corev1.PersistentVolumeReclaimPolicy, labels map[string]string, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.PersistentVolumeSpec{
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}, AccessModes: modes, StorageClassName: class,
		PersistentVolumeReclaimPolicy: policy,
		PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name}},
	}}
}

func claim(name, size string, class *string, sel *metav1.LabelSelector, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: modes, StorageClassName: class, Selector: sel,
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
	}}
}

// A claim binds the smallest Available volume that fits its class, access modes, size and
// selector; deleting the claim releases a Retain volume and deletes a Delete volume.
func TestBinding(t *testing.T) {
	c := controlplanetest.Start(t, nil)
	ctx := context.Background()
	pvs, pvcs := c.Client.CoreV1().PersistentVolumes(), c.Client.CoreV1().PersistentVolumeClaims("default")
	rwo, rwx := corev1.ReadWriteOnce, corev1.ReadWriteMany
	fast := "fast"
	for _, pv := range []*corev1.PersistentVolume{
		volume("small", "1Gi", "", corev1.PersistentVolumeReclaimRetain, nil, rwo),      // too small
		volume("big", "10Gi", "", corev1.PersistentVolumeReclaimRetain, nil, rwo),       // fits, not the smallest
		volume("medium", "5Gi", "", corev1.PersistentVolumeReclaimRetain, nil, rwo),     // the one
		volume("shared", "3Gi", "", corev1.PersistentVolumeReclaimRetain, nil, rwx),     // wrong access mode
		volume("classy", "3Gi", "fast", corev1.PersistentVolumeReclaimRetain, nil, rwo), // wrong class
		volume("labeled", "20Gi", "fast", corev1.PersistentVolumeReclaimDelete, map[string]string{"tier": "gold"}, rwo, rwx),
	} {
		if _, err := pvs.Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	controllertest.WaitFor(t, "volumes Available", 15*time.Second, func() (bool, string) {
		pv, err := pvs.Get(ctx, "medium", metav1.GetOptions{})
		return err == nil && pv.Status.Phase == corev1.VolumeAvailable, fmt.Sprint(err)
	})
	if _, err := pvcs.Create(ctx, claim("data", "2Gi", nil, nil, rwo), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gold := &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}
	if _, err := pvcs.Create(ctx, claim("gold", "4Gi", &fast, gold, rwx), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bound := func(claimName, volumeName string) func() (bool, string) {
		return func() (bool, string) {
			pvc, err := pvcs.Get(ctx, claimName, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			pv, err := pvs.Get(ctx, volumeName, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			ok := pvc.Spec.VolumeName == volumeName && pvc.Status.Phase == corev1.ClaimBound && pv.Status.Phase == corev1.VolumeBound &&
				pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID == pvc.UID && pvc.Annotations["pv.kubernetes.io/bind-completed"] == "yes"
			return ok, fmt.Sprintf("claim %s->%q %s, volume %s %s", claimName, pvc.Spec.VolumeName, pvc.Status.Phase, volumeName, pv.Status.Phase)
		}
	}
	controllertest.WaitFor(t, "data bound to medium", 15*time.Second, bound("data", "medium"))
	controllertest.WaitFor(t, "gold bound to labeled", 15*time.Second, bound("gold", "labeled"))
	pvc, _ := pvcs.Get(ctx, "data", metav1.GetOptions{})
	if got := pvc.Status.Capacity[corev1.ResourceStorage]; got.String() != "5Gi" {
		t.Errorf("claim capacity %s, want the volume's 5Gi", got.String())
	}
	out := c.MustKubectl(t, "", "get", "pvc", "data")
	if want := "Bound"; !strings.Contains(out, want) || !strings.Contains(out, "medium") {
		t.Errorf("kubectl get pvc:\n%s", out)
	}

	// A claim nothing fits stays Pending.
	if _, err := pvcs.Create(ctx, claim("huge", "100Gi", nil, nil, rwo), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	c.MustKubectl(t, "", "delete", "pvc", "data", "gold")
	controllertest.WaitFor(t, "Retain volume Released", 15*time.Second, func() (bool, string) {
		pv, err := pvs.Get(ctx, "medium", metav1.GetOptions{})
		return err == nil && pv.Status.Phase == corev1.VolumeReleased, fmt.Sprint(pv.Status.Phase, err)
	})
	controllertest.WaitFor(t, "Delete volume deleted", 15*time.Second, func() (bool, string) {
		_, err := pvs.Get(ctx, "labeled", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	pvc, err := pvcs.Get(ctx, "huge", metav1.GetOptions{})
	if err != nil || pvc.Status.Phase != corev1.ClaimPending || pvc.Spec.VolumeName != "" {
		t.Errorf("claim nothing fits: %v %+v", err, pvc.Status)
	}
}

// TestClaimsNamingOrLackingAClass: a claim naming a volume that cannot serve it is told so
// (VolumeMismatch, kube's words) and stays Pending; a volume and claim naming each other
// bind, and growing it is refused (kube's PersistentVolumeClaimResize); a claim made before any default class gets the default once there is one.
func TestClaimsNamingOrLackingAClass(t *testing.T) {
	c := controlplanetest.Start(t, nil)
	ctx := context.Background()
	pvs, pvcs := c.Client.CoreV1().PersistentVolumes(), c.Client.CoreV1().PersistentVolumeClaims("default")
	rwo, none := corev1.ReadWriteOnce, ""
	narrow := volume("narrow", "1Gi", "", corev1.PersistentVolumeReclaimRetain, nil, rwo)
	pre := volume("pre", "1Gi", "", corev1.PersistentVolumeReclaimRetain, nil, rwo)
	pre.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: "both"}
	wantsNarrow, both := claim("wants-narrow", "2Gi", &none, nil, rwo), claim("both", "1Gi", &none, nil, rwo)
	wantsNarrow.Spec.VolumeName, both.Spec.VolumeName = "narrow", "pre"
	late := claim("late", "5Gi", nil, nil, rwo) // no volume fits
	for _, pv := range []*corev1.PersistentVolume{narrow, pre} {
		if _, err := pvs.Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, pvc := range []*corev1.PersistentVolumeClaim{wantsNarrow, both, late} {
		if _, err := pvcs.Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	controllertest.Eventually(t, "VolumeMismatch event", 15*time.Second, func() string {
		return c.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.name=wants-narrow", "-o", `jsonpath={.items[?(@.reason=="VolumeMismatch")].message}`)
	}, `Cannot bind to requested volume "narrow": requested PV is too small`)
	controllertest.WaitFor(t, "both bound to pre", 15*time.Second, func() (bool, string) {
		pvc, err := pvcs.Get(ctx, "both", metav1.GetOptions{})
		return err == nil && pvc.Status.Phase == corev1.ClaimBound, fmt.Sprint(pvc.Status.Phase, err)
	})
	if pvc, err := pvcs.Get(ctx, "wants-narrow", metav1.GetOptions{}); err != nil || pvc.Status.Phase != corev1.ClaimPending {
		t.Errorf("claim naming a volume too small: %v %s, want Pending", err, pvc.Status.Phase)
	}
	// Growing a claim whose class does not allow expansion (here: no class) is refused.
	out, err := c.Kubectl(t, "", "patch", "pvc", "both", "-p", `{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`)
	if want := `Error from server (Forbidden): persistentvolumeclaims "both" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`; err == nil || !strings.Contains(out, want) {
		t.Errorf("growing a claim of no class: %v\n%s\nwant %s", err, out, want)
	}

	c.MustKubectl(t, `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: std
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: example.com/nothing
`, "apply", "-f", "-")
	controllertest.Eventually(t, "the late claim's class", 30*time.Second, func() string {
		return c.MustKubectl(t, "", "get", "pvc", "late", "-o", "jsonpath={.spec.storageClassName}")
	}, "std")
}
