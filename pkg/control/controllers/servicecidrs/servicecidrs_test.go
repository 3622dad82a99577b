package servicecidrs_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
)

func TestMain(m *testing.M) { controlplanetest.Main(m) }

// TestServiceCIDRLifecycle: a new ServiceCIDR gets the finalizer and Ready, as
// kube-controller-manager's service-cidr-controller gives them, and a Service may then take
// a cluster IP of it (the API server's allocator serves Ready ServiceCIDRs). Deleted while
// that Service holds the IP, it stays, not Ready ("Terminating"), so nothing new is
// allocated from it; once the Service is gone, it goes, after kube's grace period.
func TestServiceCIDRLifecycle(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx := context.Background()
	cidrs := c.Client.NetworkingV1().ServiceCIDRs()
	if _, err := cidrs.Create(ctx, &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "extra"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.200.0.0/24"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cidrs.Delete(context.Background(), "extra", metav1.DeleteOptions{}) })
	ready := func(status metav1.ConditionStatus, reason, message string) func() (bool, string) {
		return func() (bool, string) {
			sc, err := cidrs.Get(ctx, "extra", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			cond := apimeta.FindStatusCondition(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady)
			ok := cond != nil && cond.Status == status && cond.Reason == reason && cond.Message == message &&
				slices.Contains(sc.Finalizers, "networking.k8s.io/service-cidr-finalizer")
			return ok, fmt.Sprintf("finalizers %v, conditions %+v", sc.Finalizers, sc.Status.Conditions)
		}
	}
	controllertest.WaitFor(t, "extra Ready, with the finalizer", 10*time.Second, ready(metav1.ConditionTrue, "", "Kubernetes Service CIDR is ready"))

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "in-extra"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.200.0.10", Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := c.Client.CoreV1().Services(c.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a Service with a cluster IP of the Ready ServiceCIDR: %v", err)
	}
	if err := cidrs.Delete(ctx, "extra", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "extra not Ready while 10.200.0.10 is held", 10*time.Second, ready(metav1.ConditionFalse, networkingv1.ServiceCIDRReasonTerminating,
		"There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR"))
	svc.Name, svc.Spec.ClusterIP = "late", "10.200.0.11"
	if _, err := c.Client.CoreV1().Services(c.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err == nil ||
		!strings.Contains(err.Error(), "the provided network does not match the current range") {
		t.Errorf("a cluster IP of a ServiceCIDR being deleted: %v, want refused", err)
	}
	if err := c.Client.CoreV1().Services(c.Namespace).Delete(ctx, "in-extra", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "extra gone", 30*time.Second, func() (bool, string) {
		_, err := cidrs.Get(ctx, "extra", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// A ServiceCIDR being deleted goes, though a Service still holds an IP of it, once another
// ServiceCIDR holds that IP: the new one's arrival looks at the ones it overlaps, as kube's
// controller does.
func TestServiceCIDRReleasedByAWiderOne(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx := context.Background()
	cidrs := c.Client.NetworkingV1().ServiceCIDRs()
	if _, err := cidrs.Create(ctx, &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "inner"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.201.0.0/24"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cidrs.Delete(context.Background(), "wider", metav1.DeleteOptions{}) })
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "in-inner"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.201.0.10", Ports: []corev1.ServicePort{{Port: 80}}}}
	controllertest.WaitFor(t, "a Service with an IP of inner", 10*time.Second, func() (bool, string) {
		_, err := c.Client.CoreV1().Services(c.Namespace).Create(ctx, svc, metav1.CreateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	if err := cidrs.Delete(ctx, "inner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "inner held, not Ready", 10*time.Second, func() (bool, string) {
		sc, err := cidrs.Get(ctx, "inner", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		cond := apimeta.FindStatusCondition(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady)
		return cond != nil && cond.Reason == networkingv1.ServiceCIDRReasonTerminating, fmt.Sprintf("%+v", sc.Status.Conditions)
	})
	if _, err := cidrs.Create(ctx, &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "wider"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.201.0.0/16"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.WaitFor(t, "inner gone, its IP in wider", 30*time.Second, func() (bool, string) {
		_, err := cidrs.Get(ctx, "inner", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}
