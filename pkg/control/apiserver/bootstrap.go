package apiserver

import (
	"context"
	"fmt"
	"slices"

	"github.com/minik8s/minik8s/pkg/control/apiserver/fieldmanager"
	"github.com/minik8s/minik8s/pkg/control/registry/flowcontrol"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/control/registry/scheduling"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// systemNamespaces exist in every cluster; miniapi creates them when missing.
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// kubernetesService is the Service (with its Endpoints and EndpointSlice) in default through
// which pods reach the API server.
const kubernetesService = "kubernetes"

// Bootstrap creates what every Kubernetes cluster has from the start: the system namespaces,
// priority classes, FlowSchemas and PriorityLevelConfigurations, and the `kubernetes`
// Service pointing at this API server.
// What it writes is recorded in managedFields as kube-apiserver's own writes are: by its
// loopback client (manager kube-apiserver), the flowcontrol objects by its APF config producer.
func (s *Server) Bootstrap(ctx context.Context) error {
	if err := s.ranges.ServiceIPs.MigrateLegacy(ctx); err != nil {
		return err
	}
	apf := writingAs(ctx, apfConfigProducer)
	ctx = writingAs(ctx, "kube-apiserver")
	for _, name := range systemNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := s.ensure(ctx, namespacesGVR, ns, nil); err != nil {
			return err
		}
	}
	for _, pc := range scheduling.SystemPriorityClasses() {
		if err := s.ensure(ctx, schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), pc, nil); err != nil {
			return err
		}
	}
	levels, schemas := flowcontrol.BootstrapFlowControl()
	for _, pl := range levels {
		if err := s.ensure(apf, flowcontrolv1.SchemeGroupVersion.WithResource("prioritylevelconfigurations"), pl, nil); err != nil {
			return err
		}
	}
	for _, fs := range schemas {
		if err := s.ensure(apf, flowcontrolv1.SchemeGroupVersion.WithResource("flowschemas"), fs, nil); err != nil {
			return err
		}
	}
	if err := s.ensureDefaultServiceCIDR(ctx); err != nil {
		return err
	}
	return s.reconcileKubernetesService(ctx)
}

// apfConfigProducer is the field manager of kube-apiserver's FlowSchema and
// PriorityLevelConfiguration ensurer (pkg/registry/flowcontrol/ensurer).
const apfConfigProducer = "api-priority-and-fairness-config-producer-v1"

// writingAs is ctx for writes the server makes itself, recorded as manager's Updates.
func writingAs(ctx context.Context, manager string) context.Context {
	return fieldmanager.WithOwner(ctx, &fieldmanager.Owner{Manager: manager})
}

// defaultServiceCIDR is the ServiceCIDR of the API server's Service range, as
// kube-apiserver's default-servicecidr controller names it.
const defaultServiceCIDR = "kubernetes"

// serviceCIDRFinalizer holds a ServiceCIDR while cluster IPs of it are in use; Kubernetes'
// servicecidrs controller puts it on every ServiceCIDR.
const serviceCIDRFinalizer = "networking.k8s.io/service-cidr-finalizer"

// ensureDefaultServiceCIDR creates the `kubernetes` ServiceCIDR of the Service range and
// marks it Ready, as kube-apiserver's default-servicecidr controller does: a Ready
// condition already there (True or False) and a ServiceCIDR that no longer matches the
// range are left as they are.
func (s *Server) ensureDefaultServiceCIDR(ctx context.Context) error {
	cidrs := []string{s.ranges.ServiceIPs.CIDR().String()}
	gvr := networkingv1.SchemeGroupVersion.WithResource("servicecidrs")
	sc := &networkingv1.ServiceCIDR{
		ObjectMeta: metav1.ObjectMeta{Name: defaultServiceCIDR, Finalizers: []string{serviceCIDRFinalizer}},
		Spec:       networkingv1.ServiceCIDRSpec{CIDRs: cidrs},
	}
	if err := s.ensure(ctx, gvr, sc, nil); err != nil {
		return err
	}
	res, _ := s.reg.Lookup(gvr)
	_, err := s.objects.Update(ctx, res, "", defaultServiceCIDR, generic.UpdateOptions{Subresource: "status"}, func(cur runtime.Object) (runtime.Object, error) {
		sc := cur.(*networkingv1.ServiceCIDR)
		if sc.DeletionTimestamp != nil || !slices.Equal(sc.Spec.CIDRs, cidrs) ||
			apimeta.FindStatusCondition(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady) != nil {
			return cur, nil
		}
		apimeta.SetStatusCondition(&sc.Status.Conditions, metav1.Condition{Type: networkingv1.ServiceCIDRConditionReady,
			Status: metav1.ConditionTrue, Message: "Kubernetes default Service CIDR is ready"})
		return sc, nil
	})
	if err != nil {
		return fmt.Errorf("bootstrap servicecidrs %s status: %w", defaultServiceCIDR, err)
	}
	return nil
}

// reconcileKubernetesService makes the `kubernetes` Service hold the first IP of the range
// and send port 443 to the API servers' secure port, through Endpoints and an EndpointSlice
// naming every live API server (endpoints.go).
func (s *Server) reconcileKubernetesService(ctx context.Context) error {
	https := corev1.ServicePort{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(int32(s.advertise.Port()))}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetesService, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{ClusterIP: s.ranges.ServiceIPs.First().String(), Ports: []corev1.ServicePort{https}},
	}
	err := s.ensure(ctx, corev1.SchemeGroupVersion.WithResource("services"), svc, func(cur runtime.Object) {
		cur.(*corev1.Service).Spec.Ports = svc.Spec.Ports
	})
	if apierrors.IsInvalid(err) { // say the first IP was taken: the cluster still works without it
		s.log.Error("the kubernetes Service could not be created", "err", err)
	} else if err != nil {
		return err
	}
	if !s.advertisable() {
		s.log.Info("the kubernetes Service gets no endpoints: the API server has no address pods can reach", "address", s.advertise.Addr())
		return nil
	}
	// This server's lease and address now; RunEndpointReconciler keeps them.
	return s.reconcileEndpoints(ctx, false)
}

// ensure creates obj if it is missing, else brings the stored object in line with
// reconcile (nil: leaves it as it is).
func (s *Server) ensure(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object, reconcile func(cur runtime.Object)) error {
	res, ok := s.reg.Lookup(gvr)
	if !ok {
		return fmt.Errorf("registry has no %s", gvr)
	}
	m := mustMeta(obj)
	// Update first: a create of what exists could fail on other grounds than existing (the
	// cluster IP it asks for is held by the existing Service).
	update := func() error {
		if reconcile == nil {
			return apierrors.NewNotFound(res.GroupResource(), m.GetName())
		}
		_, err := s.objects.Update(ctx, res, m.GetNamespace(), m.GetName(), generic.UpdateOptions{}, func(cur runtime.Object) (runtime.Object, error) {
			reconcile(cur)
			return cur, nil
		})
		return err
	}
	err := update()
	if apierrors.IsNotFound(err) {
		_, err = s.objects.Create(ctx, res, obj.DeepCopyObject(), generic.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Another API server made it since the update (several start at once on one
			// etcd): bring that one in line instead.
			err = nil
			if reconcile != nil {
				err = update()
			}
		}
	}
	if err != nil {
		return fmt.Errorf("bootstrap %s %s: %w", res.Resource, m.GetName(), err)
	}
	return nil
}
