package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/minik8s/minik8s/pkg/agent/cm"
	"github.com/minik8s/minik8s/pkg/network"
)

// cleanupOrphans removes what belongs to no pod this node knows: containers,
// netns and log directories of pods that were deleted while minilet was
// down, or are not bound to this node any more, and pod addresses held by
// sandboxes that are gone. Pods that are known keep
// theirs, which is how a restarted minilet adopts running pods.
func (a *Agent) cleanupOrphans(ctx context.Context) error {
	// Look at the disk and the runtime before asking what is known: a pod
	// made after this point is in the known set already.
	containers, err := a.rt.ListContainers(ctx, "")
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	netnsNames, err := dirNames(a.cfg.netnsDir())
	if err != nil {
		return err
	}
	logDirs, err := dirNames(a.cfg.logsDir())
	if err != nil {
		return err
	}
	volumeDirs, err := a.volumes.PodUIDs()
	if err != nil {
		return err
	}
	known := a.knownPods()

	var errs []error
	orphans := map[string]bool{}
	for _, c := range containers {
		if !known[types.UID(c.PodUID)] {
			orphans[c.PodUID] = true
		}
	}
	for _, uid := range netnsNames {
		if !known[types.UID(uid)] {
			orphans[uid] = true
		}
	}
	for uid := range orphans {
		a.log.Info("removing containers and network of a pod that is not on this node", "podUID", uid)
		if err := a.sync.KillOrphan(ctx, uid); err != nil {
			errs = append(errs, fmt.Errorf("clean up pod %s: %w", uid, err))
			continue
		}
		errs = append(errs, cm.RemovePodCgroup(a.cfg.CgroupRoot, uid))
	}
	for _, uid := range volumeDirs {
		if !known[types.UID(uid)] {
			errs = append(errs, a.volumes.TearDown(uid))
		}
	}
	freed, err := network.ReleaseOrphanedIPs(a.cfg.CNINetworksDir(), func() (map[string]bool, error) {
		all, err := a.rt.ListContainers(ctx, "")
		ids := map[string]bool{}
		for _, c := range all {
			if c.Sandbox {
				ids[c.ID] = true
			}
		}
		return ids, err
	})
	if len(freed) > 0 {
		a.log.Info("freed the pod addresses of sandboxes that are gone", "ips", freed)
	}
	errs = append(errs, err)
	for _, dir := range logDirs {
		uid := dir[strings.LastIndex(dir, "_")+1:]
		if !known[types.UID(uid)] {
			if err := os.RemoveAll(filepath.Join(a.cfg.logsDir(), dir)); err != nil {
				errs = append(errs, fmt.Errorf("remove logs of pod %s: %w", uid, err))
			}
		}
	}
	return errors.Join(errs...)
}

// knownPods are the pods bound to this node plus those whose worker is still
// tearing them down.
func (a *Agent) knownPods() map[types.UID]bool {
	known := map[types.UID]bool{}
	for _, pod := range a.nodePods() {
		known[pod.UID] = true
	}
	for uid := range a.workers.UIDs() {
		known[uid] = true
	}
	return known
}

func dirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, nil
}
