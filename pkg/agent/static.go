package agent

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/podsync"
	"github.com/minik8s/minik8s/pkg/agent/staticpod"
)

// staticPods are the pods read from --pod-manifest-path, by UID.
type staticPods struct {
	mu   sync.Mutex
	pods map[types.UID]*corev1.Pod
	// kick asks the API side to bring the mirror pods in line now.
	kick chan struct{}
}

// runStaticPods feeds the static pods of the manifest directory to the workers.
func (a *Agent) runStaticPods(ctx context.Context) {
	src := &staticpod.Source{
		Dir: a.cfg.PodManifestPath, Node: a.cfg.NodeName, Period: a.cfg.FileCheckFrequency,
		Update: a.setStaticPods, Log: a.log,
		Invalid: func(file string, err error) {
			a.log.Error("static pod manifest ignored", "file", file, "err", err)
			a.nodeEvent(corev1.EventTypeWarning, "FailedStaticPod", "Static pod manifest %s ignored: %v", file, err)
		},
	}
	src.Run(ctx)
}

// setStaticPods replaces the set of static pods: new and edited ones (an edit is a new
// UID) start, those whose file went are stopped and removed.
func (a *Agent) setStaticPods(pods []*corev1.Pod) {
	a.static.mu.Lock()
	old := a.static.pods
	a.static.pods = make(map[types.UID]*corev1.Pod, len(pods))
	for _, p := range pods {
		a.static.pods[p.UID] = p
	}
	a.static.mu.Unlock()
	for uid := range old {
		if _, ok := a.static.pods[uid]; !ok {
			a.workers.Remove(uid)
		}
	}
	for _, p := range pods {
		if _, ok := old[p.UID]; !ok {
			a.log.Info("static pod", "pod", podsync.PodKey(p), "uid", p.UID)
		}
		a.workers.Update(p)
	}
	a.mirrorsChanged()
}

func (a *Agent) staticPodList() []*corev1.Pod {
	a.static.mu.Lock()
	defer a.static.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(a.static.pods))
	for _, p := range a.static.pods {
		out = append(out, p)
	}
	return out
}

// staticPod is the static pod of that UID, if the manifest directory has it.
func (a *Agent) staticPod(uid types.UID) *corev1.Pod {
	a.static.mu.Lock()
	defer a.static.mu.Unlock()
	return a.static.pods[uid]
}

// mirrorsChanged brings the mirror pods in line soon (a static pod or a mirror changed).
func (a *Agent) mirrorsChanged() {
	select {
	case a.static.kick <- struct{}{}:
	default:
	}
}

// runMirrors syncs the mirror pods whenever asked, once the API informer has synced.
func (a *Agent) runMirrors(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.static.kick:
		}
		if a.apiSynced.Load() {
			a.syncMirrorPods(ctx)
		}
	}
}

// syncMirrorPods makes the API show each static pod as a mirror pod (its name, the
// kubernetes.io/config.mirror annotation, the Node as owner): a missing mirror is made, a
// stale one (of an older version of the file, or of a pod whose file went) is deleted.
func (a *Agent) syncMirrorPods(ctx context.Context) {
	static := map[string]*corev1.Pod{}
	for _, p := range a.staticPodList() {
		static[p.Namespace+"/"+p.Name] = p
	}
	existing := map[string]*corev1.Pod{}
	for _, pod := range a.apiPods() {
		key := pod.Namespace + "/" + pod.Name
		if !staticpod.IsMirror(pod) {
			if _, clash := static[key]; clash {
				a.log.Error("static pod shadowed: an API pod has its name", "pod", key)
			}
			continue
		}
		// A mirror of an older version of the file, of a file that went, or one a user
		// deletes (nobody else would finish its graceful deletion) goes at once; the
		// current version's is made anew once it is gone.
		if s, ok := static[key]; !ok || pod.Annotations[staticpod.AnnotationMirror] != string(s.UID) || pod.DeletionTimestamp != nil {
			a.deleteMirror(ctx, pod)
		}
		existing[key] = pod
	}
	for key, s := range static {
		if _, ok := existing[key]; !ok {
			a.createMirror(ctx, s)
		}
	}
}

// apiPods are the pods bound to this node as the informer has them, mirrors included.
func (a *Agent) apiPods() []*corev1.Pod {
	all, _ := a.podLister.List(labels.Everything()) // a lister's List never fails
	return all
}

func (a *Agent) createMirror(ctx context.Context, s *corev1.Pod) {
	node, err := a.client.CoreV1().Nodes().Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		a.log.Error("create mirror pod: read the node", "pod", podsync.PodKey(s), "err", err)
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
	mirror.Annotations[staticpod.AnnotationMirror] = string(s.UID)
	_, err = a.client.CoreV1().Pods(s.Namespace).Create(ctx, mirror, metav1.CreateOptions{})
	switch {
	case err == nil:
		a.log.Info("created mirror pod", "pod", podsync.PodKey(s))
	case apierrors.IsAlreadyExists(err): // the informer has not seen it yet
	default:
		a.log.Error("create mirror pod", "pod", podsync.PodKey(s), "err", err)
		a.nodeEvent(corev1.EventTypeWarning, "FailedMirrorPod", "Mirror pod of static pod %s not created: %v", podsync.PodKey(s), err)
	}
}

func (a *Agent) deleteMirror(ctx context.Context, mirror *corev1.Pod) {
	err := a.client.CoreV1().Pods(mirror.Namespace).Delete(ctx, mirror.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0), Preconditions: metav1.NewUIDPreconditions(string(mirror.UID)),
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		a.log.Error("delete stale mirror pod", "pod", podsync.PodKey(mirror), "err", err)
	}
}

// mirrorOf is the API's mirror of a static pod, if it has one of this version.
func (a *Agent) mirrorOf(s *corev1.Pod) *corev1.Pod {
	if !a.apiSynced.Load() {
		return nil
	}
	m, err := a.podLister.Pods(s.Namespace).Get(s.Name)
	if err != nil || m.Annotations[staticpod.AnnotationMirror] != string(s.UID) || m.DeletionTimestamp != nil {
		return nil
	}
	return m
}
