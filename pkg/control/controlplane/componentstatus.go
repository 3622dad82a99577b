package controlplane

import (
	"context"
	"time"

	"github.com/minik8s/minik8s/pkg/control/store"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// storeProbeTimeout bounds the store's health check of `kubectl get componentstatuses`.
const storeProbeTimeout = 2 * time.Second

// componentStatuses answers `kubectl get componentstatuses` as kube-apiserver does: the
// scheduler and the controller manager, which run in this miniapi (healthy while it
// serves), and the store as etcd-0, healthy when it answers a read.
func componentStatuses(st store.Interface) func(ctx context.Context) ([]runtime.Object, error) {
	return func(ctx context.Context) ([]runtime.Object, error) {
		ctx, cancel := context.WithTimeout(ctx, storeProbeTimeout)
		defer cancel()
		etcd := componentStatus("etcd-0", nil)
		if _, _, err := st.List(ctx, "/registry/core/namespaces/default"); err != nil {
			etcd = componentStatus("etcd-0", err)
		}
		return []runtime.Object{componentStatus("scheduler", nil), componentStatus("controller-manager", nil), etcd}, nil
	}
}

// componentStatus is a component's Healthy condition: True with "ok", or False with err.
func componentStatus(name string, err error) *corev1.ComponentStatus {
	c := corev1.ComponentCondition{Type: corev1.ComponentHealthy, Status: corev1.ConditionTrue, Message: "ok"}
	if err != nil {
		c = corev1.ComponentCondition{Type: corev1.ComponentHealthy, Status: corev1.ConditionFalse, Error: err.Error()}
	}
	return &corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: name}, Conditions: []corev1.ComponentCondition{c}}
}
