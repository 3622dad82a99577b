package imagegc

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/minik8s/minik8s/pkg/runtime"
)

type fakeRuntime struct {
	images         []runtime.Image
	containers     []runtime.Container
	used, capacity uint64
	removed        []string
	busy           map[string]bool // images whose removal fails
}

func (f *fakeRuntime) ListImages(context.Context) ([]runtime.Image, error) { return f.images, nil }
func (f *fakeRuntime) ListContainers(context.Context, string) ([]runtime.Container, error) {
	return f.containers, nil
}
func (f *fakeRuntime) ImageFsUsage(context.Context) (uint64, uint64, error) {
	return f.used, f.capacity, nil
}
func (f *fakeRuntime) RemoveImage(_ context.Context, name string) error {
	if f.busy[name] {
		return errors.New("image " + name + " is busy")
	}
	f.removed = append(f.removed, name)
	for _, img := range f.images {
		if img.Name == name {
			f.used -= uint64(img.Size)
		}
	}
	f.images = slices.DeleteFunc(f.images, func(img runtime.Image) bool { return img.Name == name })
	return nil
}

func TestGarbageCollect(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	old := now.Add(-time.Hour)
	rt := &fakeRuntime{
		capacity: 1000, used: 900, // 90% > 85%: free down to 80% = 100 bytes
		images: []runtime.Image{
			{Name: "pause", Size: 300, CreatedAt: old.Add(-time.Hour)},
			{Name: "running", Size: 300, CreatedAt: old.Add(-time.Hour)},
			{Name: "used-recently", Size: 60, CreatedAt: old.Add(-2 * time.Hour)},
			{Name: "oldest", Size: 60, CreatedAt: old},
			{Name: "newer", Size: 60, CreatedAt: old.Add(time.Minute)},
			{Name: "just-pulled", Size: 500, CreatedAt: now},
		},
		containers: []runtime.Container{{Image: "running"}, {Image: "used-recently"}},
	}
	c := New(rt, 85, 80, clk, slog.Default(), "pause")
	if _, err := c.GarbageCollect(context.Background()); err != nil { // at 90%, but it notes the use first
		t.Fatal(err)
	}
	// That first pass removed the two least recently used: oldest, then newer (120 >= 100).
	if !slices.Equal(rt.removed, []string{"oldest", "newer"}) {
		t.Errorf("removed %q, want oldest then newer", rt.removed)
	}

	rt.removed, rt.used = nil, 950
	rt.containers = []runtime.Container{{Image: "running"}}
	clk.Step(time.Minute)
	freed, err := c.GarbageCollect(context.Background())
	want := "Insufficient free disk space on the node's image filesystem (95% of 1000 B used). " +
		"Failed to free sufficient space by deleting unused images (freed 60 bytes). " +
		"Investigate disk usage, as it could be used by active images, logs, volumes, or other data."
	var insufficient *InsufficientSpaceError
	if err == nil || err.Error() != want || !errors.As(err, &insufficient) {
		t.Errorf("err = %v; want the kubelet's FreeDiskSpaceFailed message %q", err, want)
	}
	// used-recently (no container now) goes; pause is pinned, running in use, just-pulled too young.
	if freed != 60 || !slices.Equal(rt.removed, []string{"used-recently"}) {
		t.Errorf("freed %d by removing %q", freed, rt.removed)
	}

	rt.removed, rt.used = nil, 700
	if freed, err := c.GarbageCollect(context.Background()); err != nil || freed != 0 || len(rt.removed) != 0 {
		t.Errorf("below the high threshold: freed %d, removed %q, err %v", freed, rt.removed, err)
	}
	rt.used = 1000
	if _, err := New(rt, 100, 80, clk, slog.Default()).GarbageCollect(context.Background()); err != nil || len(rt.removed) != 0 {
		t.Errorf("threshold 100 must disable the collector: removed %q, err %v", rt.removed, err)
	}
}

func TestCheckThresholds(t *testing.T) {
	for _, tc := range []struct {
		high, low int
		flag      string
	}{{85, 80, ""}, {101, 80, "--image-gc-high-threshold"}, {85, -1, "--image-gc-low-threshold"}, {70, 80, "must not be above"}} {
		err := CheckThresholds(tc.high, tc.low)
		if (tc.flag == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("CheckThresholds(%d, %d) = %v; want %q", tc.high, tc.low, err, tc.flag)
		}
	}
}

// TestDeleteUnused: the eviction manager's reclaim (the kubelet's DeleteUnusedImages)
// removes every image no container uses, whatever the thresholds, even with the
// collector disabled; pinned, used and young images stay.
func TestDeleteUnused(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	old := now.Add(-time.Hour)
	rt := &fakeRuntime{
		capacity: 1000, used: 100, // 10%: far under both thresholds
		images: []runtime.Image{
			{Name: "pause", Size: 30, CreatedAt: old},
			{Name: "running", Size: 30, CreatedAt: old},
			{Name: "a", Size: 20, CreatedAt: old},
			{Name: "b", Size: 10, CreatedAt: old.Add(time.Minute)},
			{Name: "just-pulled", Size: 10, CreatedAt: now},
		},
		containers: []runtime.Container{{Image: "running"}},
	}
	freed, err := New(rt, 100, 80, clocktesting.NewFakeClock(now), slog.Default(), "pause").DeleteUnused(context.Background())
	if err != nil || freed != 30 || !slices.Equal(rt.removed, []string{"a", "b"}) {
		t.Errorf("freed %d by removing %q (err %v), want 30 by a and b", freed, rt.removed, err)
	}
}

// TestImageVolumesAreInUse: an image a container mounts as an image volume is in use as
// the container's own image is (the kubelet's handleImageVolumes), so it stays.
func TestImageVolumesAreInUse(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	old := now.Add(-time.Hour)
	rt := &fakeRuntime{
		capacity: 1000, used: 100,
		images: []runtime.Image{
			{Name: "running", Size: 30, CreatedAt: old},
			{Name: "volume", Size: 30, CreatedAt: old},
			{Name: "unused", Size: 20, CreatedAt: old},
		},
		containers: []runtime.Container{{Image: "running", ImageVolumes: []string{"volume"}}},
	}
	freed, err := New(rt, 100, 80, clocktesting.NewFakeClock(now), slog.Default()).DeleteUnused(context.Background())
	if err != nil || freed != 20 || !slices.Equal(rt.removed, []string{"unused"}) {
		t.Errorf("freed %d by removing %q (err %v), want 20 by unused alone", freed, rt.removed, err)
	}
}

// TestRemovalFailureGoesOn: an image that fails to be removed does not stop the pass; the
// next ones go, and the pass reports what it freed with the failures, in the words of the
// kubelet's freeSpace.
func TestRemovalFailureGoesOn(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	old := now.Add(-time.Hour)
	rt := &fakeRuntime{
		capacity: 1000, used: 900, // free 100 bytes
		images: []runtime.Image{
			{Name: "a", Size: 60, CreatedAt: old},
			{Name: "b", Size: 60, CreatedAt: old.Add(time.Minute)},
			{Name: "c", Size: 60, CreatedAt: old.Add(2 * time.Minute)},
		},
		busy: map[string]bool{"a": true},
	}
	freed, err := New(rt, 85, 80, clocktesting.NewFakeClock(now), slog.Default()).GarbageCollect(context.Background())
	want := "wanted to free 100 bytes, but freed 120 bytes space with errors in image deletion: image a is busy"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	if freed != 120 || !slices.Equal(rt.removed, []string{"b", "c"}) {
		t.Errorf("freed %d by removing %q, want 120 by b and c", freed, rt.removed)
	}
}
