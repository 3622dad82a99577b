package podsource

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minik8s/minik8s/pkg/agent/staticpod"
)

// RunFiles feeds the workers the static pods of the manifest directory until ctx ends;
// without a directory there are none.
func (s *Sources) RunFiles(ctx context.Context) {
	if s.cfg.ManifestPath == "" {
		return
	}
	src := &staticpod.Source{
		Dir: s.cfg.ManifestPath, Node: s.cfg.NodeName, Period: s.cfg.FileCheckFrequency,
		Update: s.setStatic, Log: s.cfg.Log,
		Invalid: func(file string, err error) {
			s.cfg.Log.Error("static pod manifest ignored", "file", file, "err", err)
			s.cfg.NodeEvent(corev1.EventTypeWarning, "FailedStaticPod", "Static pod manifest %s ignored: %v", file, err)
		},
	}
	src.Run(ctx)
}

// setStatic replaces the set of static pods: new and edited ones (an edit is a new UID)
// start, those whose file went are stopped and removed.
func (s *Sources) setStatic(pods []*corev1.Pod) {
	s.mu.Lock()
	old := s.static
	s.static = make(map[types.UID]*corev1.Pod, len(pods))
	for _, p := range pods {
		s.static[p.UID] = p
	}
	s.mu.Unlock()
	for uid := range old {
		if _, ok := s.static[uid]; !ok {
			s.cfg.Workers.Remove(uid)
		}
	}
	for _, p := range pods {
		if _, ok := old[p.UID]; !ok {
			s.cfg.Log.Info("static pod", "pod", p.Namespace+"/"+p.Name, "uid", p.UID)
		}
		s.cfg.Workers.Update(p)
	}
	s.mirrorsChanged()
}

func (s *Sources) staticPods() []*corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(s.static))
	for _, p := range s.static {
		out = append(out, p)
	}
	return out
}

// staticPod is the static pod of that UID, if the manifest directory has it.
func (s *Sources) staticPod(uid types.UID) *corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.static[uid]
}

// mirrorsChanged brings the mirror pods in line soon (a static pod or a mirror changed).
func (s *Sources) mirrorsChanged() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// RunMirrors syncs the mirror pods whenever asked, once the API informer has synced,
// until ctx ends.
func (s *Sources) RunMirrors(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		}
		if s.synced.Load() {
			s.SyncMirrors(ctx)
		}
	}
}

// SyncMirrors makes the API show each static pod as a mirror pod and deletes stale
// mirrors; call it only once Synced.
func (s *Sources) SyncMirrors(ctx context.Context) {
	s.mirrors.Sync(ctx, s.staticPods(), s.apiPods())
}

// MirrorOf is the API's mirror of static pod sp, if it has one of this version.
func (s *Sources) MirrorOf(sp *corev1.Pod) *corev1.Pod {
	if !s.synced.Load() {
		return nil
	}
	m, err := s.lister.Pods(sp.Namespace).Get(sp.Name)
	if err != nil || m.Annotations[staticpod.AnnotationMirror] != string(sp.UID) || m.DeletionTimestamp != nil {
		return nil
	}
	return m
}
