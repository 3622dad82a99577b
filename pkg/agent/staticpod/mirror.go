package staticpod

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Mirrors shows a node's static pods in the API as mirror pods, as the kubelet's mirror
// client does: the pod's name, the kubernetes.io/config.mirror annotation and the Node as
// owner.
type Mirrors struct {
	Client kubernetes.Interface
	Node   string
	Log    *slog.Logger
	// Failed hears of a mirror pod that could not be made, with the kubelet's wording.
	Failed func(format string, args ...any)
}

// Sync brings the mirrors in line with the static pods: a missing mirror is made, a stale
// one (of an older version of the file, or of a pod whose file went) is deleted. apiPods
// are the pods bound to the node as the API has them, mirrors included.
func (m *Mirrors) Sync(ctx context.Context, static, apiPods []*corev1.Pod) {
	byKey := map[string]*corev1.Pod{}
	for _, p := range static {
		byKey[key(p)] = p
	}
	existing := map[string]*corev1.Pod{}
	for _, pod := range apiPods {
		k := key(pod)
		if !IsMirror(pod) {
			if _, clash := byKey[k]; clash {
				m.Log.Error("static pod shadowed: an API pod has its name", "pod", k)
			}
			continue
		}
		// A mirror of an older version of the file, of a file that went, or one a user
		// deletes (nobody else would finish its graceful deletion) goes at once; the
		// current version's is made anew once it is gone.
		if s, ok := byKey[k]; !ok || pod.Annotations[AnnotationMirror] != string(s.UID) || pod.DeletionTimestamp != nil {
			m.delete(ctx, pod)
		}
		existing[k] = pod
	}
	for k, s := range byKey {
		if _, ok := existing[k]; !ok {
			m.create(ctx, s)
		}
	}
}

func (m *Mirrors) create(ctx context.Context, s *corev1.Pod) {
	node, err := m.Client.CoreV1().Nodes().Get(ctx, m.Node, metav1.GetOptions{})
	if err != nil {
		m.Log.Error("create mirror pod: read the node", "pod", key(s), "err", err)
		return
	}
	mirror := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: s.Name, Namespace: s.Namespace, Labels: s.Labels, Annotations: map[string]string{},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: ptr.To(true)}},
		},
		Spec: *s.Spec.DeepCopy(),
	}
	for k, v := range s.Annotations {
		mirror.Annotations[k] = v
	}
	mirror.Annotations[AnnotationMirror] = string(s.UID)
	_, err = m.Client.CoreV1().Pods(s.Namespace).Create(ctx, mirror, metav1.CreateOptions{})
	switch {
	case err == nil:
		m.Log.Info("created mirror pod", "pod", key(s))
	case apierrors.IsAlreadyExists(err): // the informer has not seen it yet
	default:
		m.Log.Error("create mirror pod", "pod", key(s), "err", err)
		m.Failed("Mirror pod of static pod %s not created: %v", key(s), err)
	}
}

func (m *Mirrors) delete(ctx context.Context, mirror *corev1.Pod) {
	err := m.Client.CoreV1().Pods(mirror.Namespace).Delete(ctx, mirror.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0), Preconditions: metav1.NewUIDPreconditions(string(mirror.UID)),
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		m.Log.Error("delete stale mirror pod", "pod", key(mirror), "err", err)
	}
}

func key(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }
