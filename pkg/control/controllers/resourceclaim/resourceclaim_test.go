package resourceclaim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
)

func TestMain(m *testing.M) { controlplanetest.Main(m) }

func claimPod(name, template string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		Containers:     []corev1.Container{{Name: "app", Image: "localhost/minik8s/busybox:v1", Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
		ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To(template)}},
	}}
}

// TestClaimsFromTemplates: a pod's claim that names a ResourceClaimTemplate gets a
// ResourceClaim POD-CLAIM-xxxxx made from it, owned by the pod and recorded in its
// status.resourceClaimStatuses, as kube-controller-manager's resourceclaim-controller makes
// it; a missing template is the pod's Warning FailedResourceClaimCreation in kube's words;
// the claim of a pod that failed is deleted.
func TestClaimsFromTemplates(t *testing.T) {
	c := controlplanetest.Shared(t)
	ns := c.Namespace
	ctx := context.Background()
	template := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "one-gpu"}, Spec: resourcev1.ResourceClaimTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"kind": "gpu"}, Annotations: map[string]string{"note": "x"}},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}}}}}
	if _, err := c.Client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, template, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := c.Client.CoreV1().Pods(ns).Create(ctx, claimPod("web", "one-gpu"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var claimName string
	controllertest.WaitFor(t, "pod web's status naming its claim", 10*time.Second, func() (bool, string) {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		s := p.Status.ResourceClaimStatuses
		if len(s) == 1 && s[0].Name == "gpu" && s[0].ResourceClaimName != nil {
			claimName = *s[0].ResourceClaimName
			return true, ""
		}
		return false, fmt.Sprintf("%+v", s)
	})
	claim, err := c.Client.ResourceV1().ResourceClaims(ns).Get(ctx, claimName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(claim.Name, "web-gpu-") || claim.Annotations["resource.kubernetes.io/pod-claim-name"] != "gpu" || claim.Annotations["note"] != "x" ||
		claim.Labels["kind"] != "gpu" || !metav1.IsControlledBy(claim, pod) || claim.Spec.Devices.Requests[0].Exactly.DeviceClassName != "gpu.example.com" {
		t.Errorf("claim %+v, want web-gpu-xxxxx from the template, owned by the pod", claim.ObjectMeta)
	}

	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, claimPod("lost", "nosuch"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := `PodResourceClaim gpu: resource claim template "nosuch": resourceclaimtemplate.resource.k8s.io "nosuch" not found`
	controllertest.WaitFor(t, fmt.Sprintf("pod lost's Warning FailedResourceClaimCreation %q", want), 10*time.Second, func() (bool, string) {
		events, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "lost").String()})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events.Items {
			if e.Reason == "FailedResourceClaimCreation" && e.Message == want && e.Source.Component == "resource_claim" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", events.Items)
	})

	pod, err = c.Client.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodFailed
	if _, err := c.Client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "the failed pod's claim deleted", 10*time.Second, func() (bool, string) {
		_, err := c.Client.ResourceV1().ResourceClaims(ns).Get(ctx, claimName, metav1.GetOptions{})
		return err != nil, fmt.Sprint(err)
	})
}
