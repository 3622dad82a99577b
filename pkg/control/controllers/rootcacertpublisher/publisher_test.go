package rootcacertpublisher

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestEditedConfigMapIsPutBack: as kube's syncNamespace, an edited kube-root-ca.crt gets
// its ca.crt (and only that key in data) and kube's description annotation back; its
// other annotations and its binaryData, which kube does not compare, are left as they are.
func TestEditedConfigMapIsPutBack(t *testing.T) {
	const ca = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"
	for _, tc := range []struct {
		name string
		cm   *corev1.ConfigMap
	}{
		{"annotation removed", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: Name},
			Data: map[string]string{DataKey: ca}, BinaryData: map[string][]byte{"extra": []byte("x")}}},
		{"data edited", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: Name,
			Annotations: map[string]string{"kubernetes.io/description": "mine", "other": "kept"}},
			Data: map[string]string{DataKey: "bogus", "more": "y"}, BinaryData: map[string][]byte{"extra": []byte("x")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
			client := fake.NewClientset(ns, tc.cm)
			factory := informers.NewSharedInformerFactory(client, 0)
			c, err := New(client, []byte(ca), factory.Core().V1().Namespaces(), factory.Core().V1().ConfigMaps(), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			ctx := controllertest.StartInformers(t, factory)
			if _, err := c.sync(ctx, "ns"); err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().ConfigMaps("ns").Get(ctx, Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Data) != 1 || got.Data[DataKey] != ca {
				t.Errorf("data %v, want only %s", got.Data, DataKey)
			}
			if d := got.Annotations["kubernetes.io/description"]; d != description {
				t.Errorf("description annotation %q, want kube's", d)
			}
			if o := got.Annotations["other"]; o != tc.cm.Annotations["other"] {
				t.Errorf("annotation other %q, want it left alone", o)
			}
			if string(got.BinaryData["extra"]) != "x" {
				t.Errorf("binaryData %v, want it left alone", got.BinaryData)
			}
		})
	}
}

// TestRefusedCreateIsRetried: a create refused by a quota fails the sync (retried with
// back-off, as kube's); one refused because the namespace is terminating does not.
func TestRefusedCreateIsRetried(t *testing.T) {
	const ca = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n"
	cms := schema.GroupResource{Resource: "configmaps"}
	terminating := apierrors.NewForbidden(cms, Name, errors.New("namespace ns is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	for _, tc := range []struct {
		name    string
		refusal error
		retried bool
	}{
		{"quota", apierrors.NewForbidden(cms, Name, errors.New("exceeded quota: q")), true},
		{"namespace terminating", terminating, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
			client := fake.NewClientset(ns)
			client.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.refusal
			})
			factory := informers.NewSharedInformerFactory(client, 0)
			c, err := New(client, []byte(ca), factory.Core().V1().Namespaces(), factory.Core().V1().ConfigMaps(), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.sync(controllertest.StartInformers(t, factory), "ns")
			if retried := err != nil; retried != tc.retried {
				t.Errorf("sync error %v, want retried %v", err, tc.retried)
			}
		})
	}
}
