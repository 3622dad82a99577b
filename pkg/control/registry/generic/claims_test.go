package generic

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/store"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// expectHeld checks how many cluster IPs and node ports the store holds.
func expectHeld(t *testing.T, st store.Interface, what string, wantIPs, wantPorts int) {
	t.Helper()
	ips, _, err := st.List(t.Context(), "/registry/networking.k8s.io/ipaddresses/")
	if err != nil {
		t.Fatal(err)
	}
	ports, _, err := st.List(t.Context(), "/registry/ranges/servicenodeports/")
	if err != nil {
		t.Fatal(err)
	}
	if len(ips) != wantIPs || len(ports) != wantPorts {
		t.Errorf("%s: %d IPs and %d node ports held, want %d and %d", what, len(ips), len(ports), wantIPs, wantPorts)
	}
}

// What a Service holds stays in step with the Services stored: nothing is left held by a
// create that failed, a dry run, or a Service deleted.
func TestServiceWritesHoldExactlyWhatIsStored(t *testing.T) {
	ctx := context.Background()
	s, st := newTestStore(t, Admission{})
	res, _ := s.reg.Lookup(corev1.SchemeGroupVersion.WithResource("services"))
	held := func(what string, wantIPs, wantPorts int) {
		t.Helper()
		expectHeld(t, st, what, wantIPs, wantPorts)
	}
	web := func() *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}
	}
	held("at the start", 0, 0)
	if _, err := s.Create(ctx, res, web(), CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	held("one NodePort Service", 1, 1)
	if _, err := s.Create(ctx, res, web(), CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: %v", err)
	}
	held("after a create that found the name taken", 1, 1)
	dry := web()
	dry.Name = "dry"
	if out, err := s.Create(ctx, res, dry, CreateOptions{DryRun: true}); err != nil || out.(*corev1.Service).Spec.ClusterIP == "" {
		t.Fatalf("dry run: %v", err)
	}
	held("after a dry run", 1, 1)
	if _, err := s.Delete(ctx, res, "default", "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	held("after the delete", 0, 0)
}

// refuseNamed is a validating admission plugin that refuses objects of one name.
type refuseNamed string

func (r refuseNamed) Validate(_ context.Context, a *Attributes) error {
	if a.Name == string(r) {
		return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, errors.New("refused by the test"))
	}
	return nil
}

// As kube's BeginCreate, a Service claims its IPs and ports before it is validated or
// admitted: a taken value is the answer even when something else is wrong too, and what a
// refused create had claimed is given back.
func TestServiceCreateClaimsBeforeValidation(t *testing.T) {
	ctx := context.Background()
	s, st := newTestStore(t, Admission{Validating: []ValidatingAdmission{refuseNamed("refused")}})
	res, _ := s.reg.Lookup(corev1.SchemeGroupVersion.WithResource("services"))
	svc := func(name, clusterIP string, nodePort int32, selector string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: clusterIP, Selector: map[string]string{"app": selector},
				Ports: []corev1.ServicePort{{Port: 80, NodePort: nodePort}}}}
	}
	if _, err := s.Create(ctx, res, svc("web", "10.96.0.50", 30050, "web"), CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		svc  *corev1.Service
		want string
	}{
		{svc("ip", "10.96.0.50", 0, "bad value"), "spec.clusterIPs: Invalid value: [\"10.96.0.50\"]: failed to allocate IP 10.96.0.50: provided IP is already allocated"},
		{svc("port", "", 30050, "bad value"), "spec.ports[0].nodePort: Invalid value: 30050: provided port is already allocated"},
		{svc("range", "", 80, "bad value"), "spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range"},
		{svc("bad", "10.96.0.51", 30051, "bad value"), "spec.selector: Invalid value: \"bad value\""},
		{svc("refused", "10.96.0.51", 30051, "web"), "refused by the test"},
	} {
		_, err := s.Create(ctx, res, tc.svc, CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.svc.Name, err, tc.want)
		}
	}
	// What the refused creates claimed is free again.
	expectHeld(t, st, "after refused creates", 1, 1)
	if _, err := s.Create(ctx, res, svc("again", "10.96.0.51", 30051, "web"), CreateOptions{}); err != nil {
		t.Errorf("the values refused creates had claimed: %v", err)
	}
}
