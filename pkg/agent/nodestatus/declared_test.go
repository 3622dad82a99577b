package nodestatus_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/agent/nodestatus"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
)

// The API server keeps the node's status.declaredFeatures as minilet posts them, through
// registration and a status update (NodeDeclaredFeatures is on in 1.36).
func TestDeclaredFeaturesThroughTheAPI(t *testing.T) {
	c := controlplanetest.Start(t, nil)
	m := nodestatus.New(nodestatus.Config{
		Node:   nodestatus.Node{Name: "node-1", IP: "10.200.0.11", PodCIDR: "10.244.1.0/24"},
		Client: c.Client, Clock: clock.RealClock{}, Log: slog.New(slog.DiscardHandler),
		Runtime: func(context.Context) (string, error) { return "1.6.20", nil },
	})
	if err := m.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := m.UpdateStatus(t.Context()); err != nil {
		t.Fatal(err)
	}
	node, err := c.Client.CoreV1().Nodes().Get(t.Context(), "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Status.DeclaredFeatures; !slices.Equal(got, []string{"InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers", "RestartAllContainersOnContainerExits"}) {
		t.Errorf("declaredFeatures %v", got)
	}
}
