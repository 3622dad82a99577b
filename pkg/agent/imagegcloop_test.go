package agent

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/minik8s/minik8s/pkg/agent/imagegc"
)

// TestReportImageGC: too little freed is a FreeDiskSpaceFailed event at once, and any
// failure an ImageGCFailed only when the previous pass failed too, as the kubelet's
// StartGarbageCollection; a pass that works resets it.
func TestReportImageGC(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	node := &corev1.ObjectReference{Kind: "Node", Name: "n1"}
	insufficient := &imagegc.InsufficientSpaceError{Message: "Insufficient free disk space"}
	failed := false
	for _, err := range []error{insufficient, insufficient, nil, errors.New("remove: busy")} {
		failed = reportImageGC(func(eventType, reason, format string, args ...any) {
			rec.Eventf(node, eventType, reason, format, args...)
		}, err, failed)
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	want := []string{
		"Warning FreeDiskSpaceFailed Insufficient free disk space",
		"Warning FreeDiskSpaceFailed Insufficient free disk space",
		"Warning ImageGCFailed Insufficient free disk space",
	}
	if len(got) != len(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: %q, want %q", i, got[i], want[i])
		}
	}
	if !failed {
		t.Errorf("the last pass failed, but reportImageGC says it did not")
	}
}
