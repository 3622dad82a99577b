package apiserver

import (
	"fmt"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkCreate measures a create through the handler on the watch cache, as miniapi
// serves it: decoding, defaulting, managed fields, admission, validation, storage and the
// response.
func BenchmarkCreate(b *testing.B) {
	for _, bc := range []struct {
		resource string
		object   func(name string) any
	}{
		{"pods", func(name string) any { return podNamed(name, "bench") }},
		{"configmaps", func(name string) any {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "bench"}},
				Data: map[string]string{"config.yaml": "replicas: 3\nimage: registry.example.com/thing:v1.2.3\n", "zone": "zone-a"}}
		}},
	} {
		b.Run(bc.resource, func(b *testing.B) {
			s, _ := newCachedServer(b)
			h := s.Handler()
			path := "/api/v1/namespaces/default/" + bc.resource + "?fieldManager=bench"
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if w := do(b, h, http.MethodPost, path, bc.object(fmt.Sprintf("o%06d", i))); w.Code != http.StatusCreated {
					b.Fatalf("create: %d %s", w.Code, w.Body)
				}
				i++
			}
		})
	}
}
