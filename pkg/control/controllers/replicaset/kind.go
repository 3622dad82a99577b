package replicaset

import (
	"context"
	"log/slog"

	"github.com/minik8s/minik8s/internal/controller/controllerref"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// kind is what differs between ReplicaSets and ReplicationControllers: where they are
// read and how their status is written. Both are handled as apps/v1 ReplicaSets.
type kind struct {
	gvk          schema.GroupVersionKind
	component    string
	informer     cache.SharedIndexInformer
	get          func(ns, name string) (*appsv1.ReplicaSet, error)
	list         func(ns string) ([]*appsv1.ReplicaSet, error)
	fresh        func(ns string) controllerref.GetFunc[*appsv1.ReplicaSet] // from the API, past the cache
	object       func(set *appsv1.ReplicaSet) runtime.Object               // what Events are about
	updateStatus func(ctx context.Context, set *appsv1.ReplicaSet, st appsv1.ReplicaSetStatus) error
	// terminating: the status counts the pods being deleted (terminatingReplicas), which
	// ReplicaSets have (for Deployments to sum) and ReplicationControllers do not.
	terminating bool
}

// NewReplicaSet is the replicaset controller.
func NewReplicaSet(client kubernetes.Interface, sets appsinformers.ReplicaSetInformer, pods coreinformers.PodInformer, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	lister := sets.Lister()
	k := &kind{
		gvk:         appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		component:   "replicaset",
		terminating: true,
		informer:    sets.Informer(),
		get:         func(ns, name string) (*appsv1.ReplicaSet, error) { return lister.ReplicaSets(ns).Get(name) },
		list:        func(ns string) ([]*appsv1.ReplicaSet, error) { return lister.ReplicaSets(ns).List(labels.Everything()) },
		fresh:       func(ns string) controllerref.GetFunc[*appsv1.ReplicaSet] { return client.AppsV1().ReplicaSets(ns).Get },
		object:      func(set *appsv1.ReplicaSet) runtime.Object { return set },
		updateStatus: func(ctx context.Context, set *appsv1.ReplicaSet, st appsv1.ReplicaSetStatus) error {
			set = set.DeepCopy()
			set.Status = st
			_, err := client.AppsV1().ReplicaSets(set.Namespace).UpdateStatus(ctx, set, metav1.UpdateOptions{})
			return err
		},
	}
	return newController(client, k, pods.Informer(), pods.Lister(), recorder, log)
}

// NewReplicationController is the replication controller: the same logic over
// ReplicationControllers, converted to and from ReplicaSets as Kubernetes does.
func NewReplicationController(client kubernetes.Interface, rcs coreinformers.ReplicationControllerInformer, pods coreinformers.PodInformer, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	lister := rcs.Lister()
	k := &kind{
		gvk:       corev1.SchemeGroupVersion.WithKind("ReplicationController"),
		component: "replicationmanager",
		informer:  rcs.Informer(),
		get: func(ns, name string) (*appsv1.ReplicaSet, error) {
			rc, err := lister.ReplicationControllers(ns).Get(name)
			if err != nil {
				return nil, err
			}
			return rcAsReplicaSet(rc), nil
		},
		list: func(ns string) ([]*appsv1.ReplicaSet, error) {
			list, err := lister.ReplicationControllers(ns).List(labels.Everything())
			sets := make([]*appsv1.ReplicaSet, len(list))
			for i, rc := range list {
				sets[i] = rcAsReplicaSet(rc)
			}
			return sets, err
		},
		fresh: func(ns string) controllerref.GetFunc[*appsv1.ReplicaSet] {
			return func(ctx context.Context, name string, opts metav1.GetOptions) (*appsv1.ReplicaSet, error) {
				rc, err := client.CoreV1().ReplicationControllers(ns).Get(ctx, name, opts)
				if err != nil {
					return nil, err
				}
				return rcAsReplicaSet(rc), nil
			}
		},
		object: func(set *appsv1.ReplicaSet) runtime.Object {
			return &corev1.ReplicationController{TypeMeta: metav1.TypeMeta{Kind: "ReplicationController", APIVersion: "v1"}, ObjectMeta: set.ObjectMeta}
		},
		updateStatus: func(ctx context.Context, set *appsv1.ReplicaSet, st appsv1.ReplicaSetStatus) error {
			rc, err := lister.ReplicationControllers(set.Namespace).Get(set.Name)
			if err != nil {
				return err
			}
			rc = rc.DeepCopy()
			rc.Status = rcStatus(st)
			_, err = client.CoreV1().ReplicationControllers(rc.Namespace).UpdateStatus(ctx, rc, metav1.UpdateOptions{})
			return err
		},
	}
	return newController(client, k, pods.Informer(), pods.Lister(), recorder, log)
}

func rcAsReplicaSet(rc *corev1.ReplicationController) *appsv1.ReplicaSet {
	set := &appsv1.ReplicaSet{
		ObjectMeta: rc.ObjectMeta,
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        rc.Spec.Replicas,
			MinReadySeconds: rc.Spec.MinReadySeconds,
			Selector:        &metav1.LabelSelector{MatchLabels: rc.Spec.Selector},
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas: rc.Status.Replicas, FullyLabeledReplicas: rc.Status.FullyLabeledReplicas,
			ReadyReplicas: rc.Status.ReadyReplicas, AvailableReplicas: rc.Status.AvailableReplicas,
			ObservedGeneration: rc.Status.ObservedGeneration,
		},
	}
	if rc.Spec.Template != nil {
		set.Spec.Template = *rc.Spec.Template
	}
	for _, c := range rc.Status.Conditions {
		set.Status.Conditions = append(set.Status.Conditions, appsv1.ReplicaSetCondition{Type: appsv1.ReplicaSetConditionType(c.Type),
			Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message})
	}
	return set
}

func rcStatus(st appsv1.ReplicaSetStatus) corev1.ReplicationControllerStatus {
	out := corev1.ReplicationControllerStatus{
		Replicas: st.Replicas, FullyLabeledReplicas: st.FullyLabeledReplicas, ReadyReplicas: st.ReadyReplicas,
		AvailableReplicas: st.AvailableReplicas, ObservedGeneration: st.ObservedGeneration,
	}
	for _, c := range st.Conditions {
		out.Conditions = append(out.Conditions, corev1.ReplicationControllerCondition{Type: corev1.ReplicationControllerConditionType(c.Type),
			Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message})
	}
	return out
}
