package core

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// A ReplicationController wrong everywhere is answered in the order of kube's
// ValidateReplicationControllerSpec (checked against kube-apiserver v1.36.3).
func TestReplicationControllerErrorOrder(t *testing.T) {
	template := registrytest.Template(map[string]string{"a": "b"})
	rc := &corev1.ReplicationController{ObjectMeta: registrytest.ObjMeta("rc"), Spec: corev1.ReplicationControllerSpec{
		Replicas: ptr.To[int32](-1), MinReadySeconds: -1, Template: &template,
	}}
	registrytest.ExpectErrorsInOrder(t, "replication controller", registrytest.CreateSteps(ReplicationControllerRules, rc),
		"spec.minReadySeconds: FieldValueInvalid", "spec.replicas: FieldValueInvalid")
}
