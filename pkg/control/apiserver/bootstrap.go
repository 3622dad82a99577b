package apiserver

import (
	"context"
	"fmt"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
func (s *Server) Bootstrap(ctx context.Context) error {
	for _, name := range systemNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := s.ensure(ctx, namespacesGVR, ns, nil); err != nil {
			return err
		}
	}
	for _, pc := range registry.SystemPriorityClasses() {
		if err := s.ensure(ctx, schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), pc, nil); err != nil {
			return err
		}
	}
	levels, schemas := registry.BootstrapFlowControl()
	for _, pl := range levels {
		if err := s.ensure(ctx, flowcontrolv1.SchemeGroupVersion.WithResource("prioritylevelconfigurations"), pl, nil); err != nil {
			return err
		}
	}
	for _, fs := range schemas {
		if err := s.ensure(ctx, flowcontrolv1.SchemeGroupVersion.WithResource("flowschemas"), fs, nil); err != nil {
			return err
		}
	}
	return s.reconcileKubernetesService(ctx)
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
	var err error = apierrors.NewNotFound(res.GroupResource(), m.GetName())
	if reconcile != nil {
		_, err = s.objects.Update(ctx, res, m.GetNamespace(), m.GetName(), generic.UpdateOptions{}, func(cur runtime.Object) (runtime.Object, error) {
			reconcile(cur)
			return cur, nil
		})
	}
	if apierrors.IsNotFound(err) {
		_, err = s.objects.Create(ctx, res, obj.DeepCopyObject(), generic.CreateOptions{})
		if apierrors.IsAlreadyExists(err) && reconcile == nil {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("bootstrap %s %s: %w", res.Resource, m.GetName(), err)
	}
	return nil
}
