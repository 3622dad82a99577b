package generic

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What a Service holds stays in step with the Services stored: nothing is left held by a
// create that failed, a dry run, or a Service deleted.
func TestServiceWritesHoldExactlyWhatIsStored(t *testing.T) {
	ctx := context.Background()
	s, st := newTestStore(t, Admission{})
	res, _ := s.reg.Lookup(corev1.SchemeGroupVersion.WithResource("services"))
	held := func(what string, wantIPs, wantPorts int) {
		t.Helper()
		ips, _, err := st.List(ctx, "/registry/networking.k8s.io/ipaddresses/")
		if err != nil {
			t.Fatal(err)
		}
		ports, _, err := st.List(ctx, "/registry/ranges/servicenodeports/")
		if err != nil {
			t.Fatal(err)
		}
		if len(ips) != wantIPs || len(ports) != wantPorts {
			t.Errorf("%s: %d IPs and %d node ports held, want %d and %d", what, len(ips), len(ports), wantIPs, wantPorts)
		}
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
