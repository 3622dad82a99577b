package generic

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/store"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
	if _, _, err := s.Delete(ctx, res, "default", "web", metav1.DeleteOptions{}); err != nil {
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

// refuseUpdatesOf is a validating admission plugin that refuses updates of objects of one name.
type refuseUpdatesOf string

func (r refuseUpdatesOf) Validate(ctx context.Context, a *Attributes) error {
	if a.Operation != Update {
		return nil
	}
	return refuseNamed(r).Validate(ctx, a)
}

// As kube's BeginUpdate, an update claims what it adds before it is validated or admitted,
// by kube's update rules (a Service that had a cluster IP or health check port claims none;
// ports of different protocols may share a node port), and gives back what a refused update
// had claimed.
func TestServiceUpdateClaimsBeforeValidation(t *testing.T) {
	ctx := context.Background()
	s, st := newTestStore(t, Admission{Validating: []ValidatingAdmission{refuseUpdatesOf("refused")}})
	res, _ := s.reg.Lookup(corev1.SchemeGroupVersion.WithResource("services"))
	for i, name := range []string{"web", "other", "refused"} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: fmt.Sprintf("10.96.0.%d", 50+i),
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: int32(30050 + i)}}}}
		if _, err := s.Create(ctx, res, svc, CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	update := func(name string, change func(*corev1.ServiceSpec)) (*corev1.Service, error) {
		out, err := s.Update(ctx, res, "default", name, UpdateOptions{}, func(cur runtime.Object) (runtime.Object, error) {
			svc := cur.(*corev1.Service)
			change(&svc.Spec)
			return svc, nil
		})
		svc, _ := out.(*corev1.Service)
		return svc, err
	}
	badSelector := func(s *corev1.ServiceSpec) { s.Selector = map[string]string{"app": "bad value"} }
	for _, tc := range []struct {
		name   string
		change func(*corev1.ServiceSpec)
		want   string
		code   int32
	}{
		{"taken node port", func(s *corev1.ServiceSpec) { s.Ports[0].NodePort = 30051; badSelector(s) },
			"spec.ports[0].nodePort: Invalid value: 30051: provided port is already allocated", 422},
		{"node port out of range", func(s *corev1.ServiceSpec) { s.Ports[0].NodePort = 80; badSelector(s) },
			"spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range", 422},
		{"free node port", func(s *corev1.ServiceSpec) { s.Ports[0].NodePort = 30061; badSelector(s) },
			"spec.selector: Invalid value: \"bad value\"", 422},
		{"another's cluster IP", func(s *corev1.ServiceSpec) { s.ClusterIP, s.ClusterIPs = "10.96.0.51", []string{"10.96.0.51"} },
			"spec.clusterIPs[0]: Invalid value: [\"10.96.0.51\"]: may not change once set", 422},
		{"one protocol's node port twice", func(s *corev1.ServiceSpec) {
			s.Ports = append(s.Ports, corev1.ServicePort{Name: "alt", Port: 81, Protocol: corev1.ProtocolTCP, NodePort: 30050})
		}, "duplicate nodePort: {TCP 30050}", 500},
	} {
		_, err := update("web", tc.change)
		var status apierrors.APIStatus
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &status) || status.Status().Code != tc.code {
			t.Errorf("%s: got %v, want %q (%d)", tc.name, err, tc.want, tc.code)
		}
	}
	if _, err := update("refused", func(s *corev1.ServiceSpec) { s.Ports[0].NodePort = 30071 }); err == nil || !strings.Contains(err.Error(), "refused by the test") {
		t.Errorf("refused update: %v", err)
	}
	expectHeld(t, st, "after refused updates", 3, 3)
	// A UDP port may share a TCP port's node port, even of another number (a create refuses
	// that); a port without a node port gets its own, even of a number that has one.
	svc, err := update("web", func(s *corev1.ServiceSpec) {
		s.Ports = append(s.Ports,
			corev1.ServicePort{Name: "udp", Port: 81, Protocol: corev1.ProtocolUDP, NodePort: 30050},
			corev1.ServicePort{Name: "dns", Port: 80, Protocol: corev1.ProtocolUDP})
	})
	if err != nil {
		t.Fatal(err)
	}
	if p := svc.Spec.Ports; p[1].NodePort != 30050 || p[2].NodePort == 0 || p[2].NodePort == 30050 {
		t.Errorf("node ports after adding ports: %v", p)
	}
	expectHeld(t, st, "after adding ports", 3, 4)
	// What the refused updates had claimed is free again.
	for _, port := range []int32{30061, 30071} {
		if _, err := update("other", func(s *corev1.ServiceSpec) { s.Ports[0].NodePort = port }); err != nil {
			t.Errorf("node port %d a refused update had claimed: %v", port, err)
		}
	}
	expectHeld(t, st, "at the end", 3, 4)
}
