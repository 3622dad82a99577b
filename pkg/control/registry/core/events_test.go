package core

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestEventSourceField: `source` selects an event by its source component, or by its
// reporting controller when it has none (an event written through events.k8s.io), as
// kube-apiserver's (the Events API conformance test lists with source=test-controller).
func TestEventSourceField(t *testing.T) {
	for _, tc := range []struct {
		event corev1.Event
		want  string
	}{
		{corev1.Event{Source: corev1.EventSource{Component: "kubelet"}, ReportingController: "kubelet-2"}, "kubelet"},
		{corev1.Event{ReportingController: "test-controller"}, "test-controller"},
		{corev1.Event{}, ""},
	} {
		if got := EventRules.Fields(&tc.event)["source"]; got != tc.want {
			t.Errorf("source of %+v = %q, want %q", tc.event, got, tc.want)
		}
	}
}
