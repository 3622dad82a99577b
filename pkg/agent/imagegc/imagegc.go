// Package imagegc frees the node's image filesystem as the kubelet's image garbage
// collector does: when usage passes the high threshold, images no container uses are
// removed, least recently used first, until usage is under the low threshold; under disk
// pressure, before pods are evicted, all of them.
package imagegc

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/utils/clock"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// MinAge is the kubelet's --minimum-image-ttl-duration default: younger images stay,
// so an image pulled for a pod about to start is not removed under it.
const MinAge = 2 * time.Minute

// Runtime is what the collector needs from pkg/runtime.
type Runtime interface {
	ListImages(ctx context.Context) ([]runtime.Image, error)
	RemoveImage(ctx context.Context, name string) error
	ImageFsUsage(ctx context.Context) (used, capacity uint64, err error)
	ListContainers(ctx context.Context, podUID string) ([]runtime.Container, error)
}

// Collector remembers when each image was last used by a container and removes unused
// ones when the disk fills. It is safe for concurrent use.
type Collector struct {
	log                     *slog.Logger
	rt                      Runtime
	highPercent, lowPercent int
	pinned                  map[string]bool
	clock                   clock.Clock
	mu                      sync.Mutex
	lastUsed                map[string]time.Time
}

// New makes a collector for thresholds in percent of the image filesystem; pinned
// images (the pause image) are never removed. A high threshold of 100 disables it.
func New(rt Runtime, highPercent, lowPercent int, clk clock.Clock, log *slog.Logger, pinned ...string) *Collector {
	p := map[string]bool{}
	for _, name := range pinned {
		p[name] = true
	}
	return &Collector{rt: rt, highPercent: highPercent, lowPercent: lowPercent, pinned: p, clock: clk, log: log, lastUsed: map[string]time.Time{}}
}

// CheckThresholds reports thresholds the kubelet would refuse, naming its flags.
func CheckThresholds(high, low int) error {
	switch {
	case high < 0 || high > 100:
		return fmt.Errorf("--image-gc-high-threshold %d must be in [0, 100]", high)
	case low < 0 || low > 100:
		return fmt.Errorf("--image-gc-low-threshold %d must be in [0, 100]", low)
	case low > high:
		return fmt.Errorf("--image-gc-low-threshold %d must not be above --image-gc-high-threshold %d", low, high)
	}
	return nil
}

// GarbageCollect frees space when usage is at or above the high threshold and returns
// the bytes freed. An error says it could not get under the low threshold.
func (c *Collector) GarbageCollect(ctx context.Context) (int64, error) {
	inUse, err := c.noteUse(ctx)
	if err != nil {
		return 0, err
	}
	if c.highPercent >= 100 {
		return 0, nil
	}
	used, capacity, err := c.rt.ImageFsUsage(ctx)
	if err != nil {
		return 0, err
	}
	if capacity == 0 {
		return 0, nil
	}
	// The kubelet's arithmetic: usage rounded up, freeing down to the low threshold.
	available := int64(capacity) - min(int64(used), int64(capacity))
	usagePercent := 100 - int(available*100/int64(capacity))
	if usagePercent < c.highPercent {
		return 0, nil
	}
	toFree := int64(capacity)*int64(100-c.lowPercent)/100 - available
	freed, err := c.free(ctx, inUse, toFree)
	if err == nil && freed < toFree {
		err = &InsufficientSpaceError{Message: fmt.Sprintf("Insufficient free disk space on the node's image filesystem (%d%% of %s used). "+
			"Failed to free sufficient space by deleting unused images (freed %d bytes). "+
			"Investigate disk usage, as it could be used by active images, logs, volumes, or other data.",
			usagePercent, formatSize(int64(capacity)), freed)}
	}
	return freed, err
}

// InsufficientSpaceError says a collection freed less than it had to, in the words of
// the kubelet's FreeDiskSpaceFailed event.
type InsufficientSpaceError struct{ Message string }

func (e *InsufficientSpaceError) Error() string { return e.Message }

// formatSize writes a size as the kubelet's image GC messages do (binary units, one
// decimal).
func formatSize(size int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	if size < 1024 {
		return fmt.Sprintf("%d B", size)
	}
	f, i := float64(size)/1024, 0
	for ; f >= 1024 && i < len(units)-1; i++ {
		f /= 1024
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}

// DeleteUnused removes every image no container uses, whatever the thresholds, and
// returns the bytes freed: the kubelet's DeleteUnusedImages, which its eviction manager
// runs for a disk signal before it evicts pods. Pinned images and those younger than
// MinAge stay.
func (c *Collector) DeleteUnused(ctx context.Context) (int64, error) {
	inUse, err := c.noteUse(ctx)
	if err != nil {
		return 0, err
	}
	freed, err := c.free(ctx, inUse, math.MaxInt64)
	return freed, err
}

// free removes images neither in use, pinned nor younger than MinAge, least recently
// used first, until toFree bytes are freed. An error names the images that failed to go.
func (c *Collector) free(ctx context.Context, inUse map[string]bool, toFree int64) (freed int64, err error) {
	images, err := c.rt.ListImages(ctx)
	if err != nil {
		return 0, err
	}
	now := c.clock.Now()
	c.mu.Lock()
	var candidates []runtime.Image
	for _, img := range images {
		if !inUse[img.Name] && !c.pinned[img.Name] && now.Sub(img.CreatedAt) >= MinAge {
			candidates = append(candidates, img)
		}
	}
	lastUsed := func(img runtime.Image) time.Time {
		if t, ok := c.lastUsed[img.Name]; ok {
			return t
		}
		return img.CreatedAt
	}
	slices.SortFunc(candidates, func(a, b runtime.Image) int { return lastUsed(a).Compare(lastUsed(b)) })
	c.mu.Unlock()

	// An image that fails to go does not stop the others (the kubelet's freeSpace).
	var failures []error
	for _, img := range candidates {
		if freed >= toFree {
			break
		}
		c.log.Info("removing unused image to free disk space", "image", img.Name, "bytes", img.Size)
		if err := c.rt.RemoveImage(ctx, img.Name); err != nil {
			failures = append(failures, err)
			continue
		}
		freed += img.Size
		c.mu.Lock()
		delete(c.lastUsed, img.Name)
		c.mu.Unlock()
	}
	if len(failures) > 0 {
		return freed, fmt.Errorf("wanted to free %d bytes, but freed %d bytes space with errors in image deletion: %w", toFree, freed, utilerrors.NewAggregate(failures))
	}
	return freed, nil
}

// noteUse records the images containers use now, their image volumes' too, and returns them.
func (c *Collector) noteUse(ctx context.Context) (map[string]bool, error) {
	containers, err := c.rt.ListContainers(ctx, "")
	if err != nil {
		return nil, err
	}
	now := c.clock.Now()
	inUse := map[string]bool{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ctr := range containers {
		// So are the images it mounts as image volumes (the kubelet's handleImageVolumes).
		for _, img := range append([]string{ctr.Image}, ctr.ImageVolumes...) {
			inUse[img] = true
			c.lastUsed[img] = now
		}
	}
	return inUse, nil
}
