package generic

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// metadata.generation is kept only by the kinds whose Kubernetes strategy keeps it: a
// Deployment starts at 1 and counts spec changes; a Service or ConfigMap has none (kubectl
// get -o yaml shows no generation), whatever the client sends. A deletion that waits for
// finalizers counts as a change of a Deployment.
func TestGenerationOnlyForKindsThatTrackIt(t *testing.T) {
	s, _ := newTestStore(t, Admission{})
	ctx := t.Context()
	deployments, ok := s.reg.Lookup(appsv1.SchemeGroupVersion.WithResource("deployments"))
	if !ok {
		t.Fatal("no deployments")
	}
	labels := map[string]string{"app": "a"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	created, err := s.Create(ctx, deployments, d, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := created.(*appsv1.Deployment).Generation; g != 1 {
		t.Errorf("created deployment: generation %d, want 1", g)
	}
	updated, err := s.Update(ctx, deployments, "default", "a", UpdateOptions{}, func(cur runtime.Object) (runtime.Object, error) {
		d := cur.(*appsv1.Deployment).DeepCopy()
		d.Spec.Template.Spec.Containers[0].Image = "busybox:2"
		return d, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if g := updated.(*appsv1.Deployment).Generation; g != 2 {
		t.Errorf("deployment with a new image: generation %d, want 2", g)
	}
	// A Deployment's annotations are copied to its ReplicaSets: kube's strategy counts a change
	// of them as a change of intent, written to the object itself but not to its status.
	annotate := func(sub, value string) int64 {
		t.Helper()
		updated, err := s.Update(ctx, deployments, "default", "a", UpdateOptions{Subresource: sub}, func(cur runtime.Object) (runtime.Object, error) {
			d := cur.(*appsv1.Deployment).DeepCopy()
			d.Annotations = map[string]string{"note": value}
			return d, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return updated.(*appsv1.Deployment).Generation
	}
	if g := annotate("", "one"); g != 3 {
		t.Errorf("deployment with a new annotation: generation %d, want 3", g)
	}
	if g := annotate("status", "two"); g != 3 {
		t.Errorf("deployment status written with a new annotation: generation %d, want 3", g)
	}
	foreground := metav1.DeletePropagationForeground
	deleted, _, err := s.Delete(ctx, deployments, "default", "a", metav1.DeleteOptions{PropagationPolicy: &foreground})
	if err != nil {
		t.Fatal(err)
	}
	if d := deleted.(*appsv1.Deployment); d.DeletionTimestamp == nil || d.Generation != 4 {
		t.Errorf("deployment deleted in the foreground: deletionTimestamp %v generation %d, want set and 4", d.DeletionTimestamp, d.Generation)
	}

	services := s.resource(t, "services")
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", Generation: 7},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}}
	created, err = s.Create(ctx, services, svc, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := created.(*corev1.Service).Generation; g != 0 {
		t.Errorf("created service: generation %d, want none", g)
	}
	updated, err = s.Update(ctx, services, "default", "s", UpdateOptions{}, func(cur runtime.Object) (runtime.Object, error) {
		svc := cur.(*corev1.Service).DeepCopy()
		svc.Spec.Ports[0].Port = 81
		return svc, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if g := updated.(*corev1.Service).Generation; g != 0 {
		t.Errorf("service with a new port: generation %d, want none", g)
	}
}

// An EndpointSlice has no spec, yet its generation counts changes to anything but its
// metadata, and to its labels, as kube's endpointslice strategy: the endpointslice
// controllers' trackers tell their own writes from others' by it.
func TestEndpointSliceGeneration(t *testing.T) {
	s, _ := newTestStore(t, Admission{})
	ctx := t.Context()
	slices, ok := s.reg.Lookup(discoveryv1.SchemeGroupVersion.WithResource("endpointslices"))
	if !ok {
		t.Fatal("no endpointslices")
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", Generation: 9},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.5"}}}}
	created, err := s.Create(ctx, slices, slice, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := created.(*discoveryv1.EndpointSlice).Generation; g != 1 {
		t.Errorf("created slice: generation %d, want 1", g)
	}
	for _, step := range []struct {
		what   string
		change func(*discoveryv1.EndpointSlice)
		want   int64
	}{
		{"an endpoint added", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.244.0.6"}})
		}, 2},
		{"a label added", func(s *discoveryv1.EndpointSlice) { s.Labels = map[string]string{"a": "b"} }, 3},
		{"an annotation added", func(s *discoveryv1.EndpointSlice) { s.Annotations = map[string]string{"a": "b"} }, 3},
		{"nothing changed", func(*discoveryv1.EndpointSlice) {}, 3},
	} {
		updated, err := s.Update(ctx, slices, "default", "web-1", UpdateOptions{}, func(cur runtime.Object) (runtime.Object, error) {
			s := cur.(*discoveryv1.EndpointSlice).DeepCopy()
			step.change(s)
			return s, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if g := updated.(*discoveryv1.EndpointSlice).Generation; g != step.want {
			t.Errorf("slice after %s: generation %d, want %d", step.what, g, step.want)
		}
	}
}

// A webhook configuration has no spec; kube's strategies count changes to its webhooks as
// its generation, and nothing else.
func TestWebhookConfigurationGeneration(t *testing.T) {
	s, _ := newTestStore(t, Admission{})
	ctx := t.Context()
	none := admissionregistrationv1.SideEffectClassNone
	url := "https://hook.example.invalid/"
	webhook := func(name string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{Name: name, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}}
	}
	for _, kind := range []struct {
		resource string
		object   func(hooks ...admissionregistrationv1.ValidatingWebhook) runtime.Object
		add      func(obj runtime.Object, hook admissionregistrationv1.ValidatingWebhook)
	}{
		{"validatingwebhookconfigurations", func(hooks ...admissionregistrationv1.ValidatingWebhook) runtime.Object {
			return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "hooks", Generation: 5}, Webhooks: hooks}
		}, func(obj runtime.Object, hook admissionregistrationv1.ValidatingWebhook) {
			c := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
			c.Webhooks = append(c.Webhooks, hook)
		}},
		{"mutatingwebhookconfigurations", func(hooks ...admissionregistrationv1.ValidatingWebhook) runtime.Object {
			c := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "hooks", Generation: 5}}
			for _, h := range hooks {
				c.Webhooks = append(c.Webhooks, admissionregistrationv1.MutatingWebhook{Name: h.Name, SideEffects: h.SideEffects,
					AdmissionReviewVersions: h.AdmissionReviewVersions, ClientConfig: h.ClientConfig})
			}
			return c
		}, func(obj runtime.Object, h admissionregistrationv1.ValidatingWebhook) {
			c := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
			c.Webhooks = append(c.Webhooks, admissionregistrationv1.MutatingWebhook{Name: h.Name, SideEffects: h.SideEffects,
				AdmissionReviewVersions: h.AdmissionReviewVersions, ClientConfig: h.ClientConfig})
		}},
	} {
		res, ok := s.reg.Lookup(admissionregistrationv1.SchemeGroupVersion.WithResource(kind.resource))
		if !ok {
			t.Fatalf("no %s", kind.resource)
		}
		created, err := s.Create(ctx, res, kind.object(webhook("a.example.com")), CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		generation := func(obj runtime.Object) int64 { return obj.(metav1.Object).GetGeneration() }
		if g := generation(created); g != 1 {
			t.Errorf("created %s: generation %d, want 1", kind.resource, g)
		}
		for _, step := range []struct {
			what   string
			change func(runtime.Object)
			want   int64
		}{
			{"a label added", func(obj runtime.Object) { obj.(metav1.Object).SetLabels(map[string]string{"a": "b"}) }, 1},
			{"a webhook added", func(obj runtime.Object) { kind.add(obj, webhook("b.example.com")) }, 2},
			{"nothing changed", func(runtime.Object) {}, 2},
		} {
			updated, err := s.Update(ctx, res, "", "hooks", UpdateOptions{}, func(cur runtime.Object) (runtime.Object, error) {
				obj := cur.DeepCopyObject()
				step.change(obj)
				return obj, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if g := generation(updated); g != step.want {
				t.Errorf("%s after %s: generation %d, want %d", kind.resource, step.what, g, step.want)
			}
		}
	}
}
