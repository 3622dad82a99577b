package eviction

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/podsync"
	"github.com/minik8s/minik8s/pkg/stats"
)

const mi = 1 << 20

// pod is a one-container pod; requests and limits are memory in MiB (0: none).
func pod(name string, request, limit int64, priority int32) *corev1.Pod {
	res := corev1.ResourceRequirements{}
	if request > 0 {
		res.Requests = corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(request*mi, resource.BinarySI)}
	}
	if limit > 0 {
		res.Limits = corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(limit*mi, resource.BinarySI)}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec:       corev1.PodSpec{Priority: ptr.To(priority), Containers: []corev1.Container{{Name: "app", Resources: res}}},
	}
}

// memoryStats is a pod's sample using workingSet MiB, all in its container "app".
func memoryStats(p *corev1.Pod, workingSet int64) statsapi.PodStats {
	ws := uint64(workingSet * mi)
	return statsapi.PodStats{
		PodRef:     statsapi.PodReference{Name: p.Name, Namespace: p.Namespace, UID: string(p.UID)},
		Memory:     &statsapi.MemoryStats{WorkingSetBytes: &ws},
		Containers: []statsapi.ContainerStats{{Name: "app", Memory: &statsapi.MemoryStats{WorkingSetBytes: &ws}}},
	}
}

func names(pods []*corev1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return strings.Join(out, " ")
}

var memoryCrossing = stats.Crossing{Threshold: stats.Threshold{Signal: "memory.available"}, Condition: stats.MemoryPressure, Available: 50 * mi, Min: 100 * mi}

// The kubelet's order under memory pressure: pods over their requests first (BestEffort
// always is), lower priority first among them, then the most over; pods the sample lacks
// come before all.
func TestRankUnderMemoryPressure(t *testing.T) {
	guaranteed := pod("guaranteed", 200, 200, 0) // uses 150 of 200: under its request
	burstableOver := pod("burstable-over", 100, 0, 0)
	bestEffortSmall := pod("besteffort-small", 0, 0, 0)
	bestEffortBig := pod("besteffort-big", 0, 0, 0)
	important := pod("important-besteffort", 0, 0, 1000)
	unsampled := pod("unsampled", 500, 500, 0)
	samples := []statsapi.PodStats{
		memoryStats(guaranteed, 150), memoryStats(burstableOver, 400), memoryStats(bestEffortSmall, 10),
		memoryStats(bestEffortBig, 300), memoryStats(important, 900),
	}
	got := rank([]*corev1.Pod{guaranteed, important, bestEffortSmall, burstableOver, unsampled, bestEffortBig},
		statsByUID(&statsapi.Summary{Pods: samples}), memoryCrossing)
	// burstable-over is 300 MiB over its request, besteffort-big 300 over nothing: equal,
	// so the order given decides (a stable sort).
	want := "unsampled burstable-over besteffort-big besteffort-small important-besteffort guaranteed"
	if names(got) != want {
		t.Errorf("eviction order\n got %s\nwant %s", names(got), want)
	}
}

func TestRankUnderPIDPressure(t *testing.T) {
	low, high := pod("low", 0, 0, 0), pod("high", 0, 0, 10)
	busy := pod("busy", 0, 0, 0)
	sample := func(p *corev1.Pod, procs uint64) statsapi.PodStats {
		return statsapi.PodStats{PodRef: statsapi.PodReference{UID: string(p.UID)}, ProcessStats: &statsapi.ProcessStats{ProcessCount: &procs}}
	}
	got := rank([]*corev1.Pod{high, low, busy}, statsByUID(&statsapi.Summary{Pods: []statsapi.PodStats{sample(high, 500), sample(low, 3), sample(busy, 40)}}),
		stats.Crossing{Threshold: stats.Threshold{Signal: "pid.available"}, Condition: stats.PIDPressure})
	if want := "busy low high"; names(got) != want {
		t.Errorf("eviction order %s, want %s", names(got), want)
	}
}

func TestPressureMessage(t *testing.T) {
	p := pod("hog", 64, 0, 0)
	ps := memoryStats(p, 300)
	msg, annotations := pressureMessage(p, &ps, memoryCrossing, corev1.ResourceMemory)
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container app was using 300Mi, request is 64Mi, has larger consumption of memory. "
	if msg != want {
		t.Errorf("message\n got %q\nwant %q", msg, want)
	}
	if annotations[offendingContainersKey] != "app" || annotations[offendingContainersUsageKey] != "300Mi" || annotations[starvedResourceKey] != "memory" {
		t.Errorf("annotations %v", annotations)
	}
	// A container within its request is not named.
	ps = memoryStats(p, 32)
	if msg, _ := pressureMessage(p, &ps, memoryCrossing, corev1.ResourceMemory); strings.Contains(msg, "Container") {
		t.Errorf("a container under its request named: %q", msg)
	}
}

func TestLocalStorageExceeded(t *testing.T) {
	bytes := func(v uint64) *uint64 { return &v }
	withStorage := func(containerLimit, sizeLimit string) *corev1.Pod {
		p := pod("writer", 0, 0, 0)
		if containerLimit != "" {
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse(containerLimit)}
		}
		if sizeLimit != "" {
			p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse(sizeLimit))}}}}
		}
		return p
	}
	sample := statsapi.PodStats{
		EphemeralStorage: &statsapi.FsStats{UsedBytes: bytes(30 * mi)},
		VolumeStats:      []statsapi.VolumeStats{{Name: "scratch", FsStats: statsapi.FsStats{UsedBytes: bytes(20 * mi)}}},
		Containers: []statsapi.ContainerStats{{Name: "app",
			Rootfs: &statsapi.FsStats{UsedBytes: bytes(8 * mi)}, Logs: &statsapi.FsStats{UsedBytes: bytes(2 * mi)}}},
	}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{withStorage("", ""), ""},
		{withStorage("", "10Mi"), `Usage of EmptyDir volume "scratch" exceeds the limit "10Mi". `},
		{withStorage("", "64Mi"), ""},
		// The pod's 30Mi (layer, logs and volume) is past its only container's 20Mi.
		{withStorage("20Mi", ""), "Pod ephemeral local storage usage exceeds the total limit of containers 20Mi. "},
		{withStorage("64Mi", ""), ""},
	} {
		if got := localStorageExceeded(tc.pod, &sample); got != tc.want {
			t.Errorf("limits %v, volumes %v: %q, want %q", tc.pod.Spec.Containers[0].Resources.Limits, tc.pod.Spec.Volumes, got, tc.want)
		}
	}
	// A container past its own limit, in a pod whose other container lifts the pod's sum.
	p := withStorage("5Mi", "")
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")}}})
	if got, want := localStorageExceeded(p, &sample), `Container app exceeded its local ephemeral storage limit "5Mi". `; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

type fixedStats struct {
	snap     *stats.Snapshot
	onSample func()
}

func (f *fixedStats) Latest() *stats.Snapshot { return f.snap }

// Sample takes no sample: the test sets it; onSample (nil: nothing) hears of the call.
func (f *fixedStats) Sample(context.Context) {
	if f.onSample != nil {
		f.onSample()
	}
}

// testManager evicts by recording; evictErr fails the pods it names.
type testManager struct {
	*Manager
	clock     *clocktesting.FakeClock
	stats     *fixedStats
	recorder  *record.FakeRecorder
	evicted   []string
	evictions map[string]podsync.Ending
	reclaimed int
	reclaim   func() // what ReclaimDisk does besides counting (nil: nothing)
	failing   map[string]bool
}

func newTestManager(t *testing.T, thresholds string, pods []*corev1.Pod, summary statsapi.Summary, reclaim bool) *testManager {
	th, err := stats.ParseThresholds(thresholds)
	if err != nil {
		t.Fatal(err)
	}
	return newTestManagerOn(th, pods, summary, reclaim)
}

// newTestManagerOn is newTestManager on thresholds already parsed.
func newTestManagerOn(th []stats.Threshold, pods []*corev1.Pod, summary statsapi.Summary, reclaim bool) *testManager {
	tm := &testManager{recorder: record.NewFakeRecorder(100), evictions: map[string]podsync.Ending{}, failing: map[string]bool{},
		clock: clocktesting.NewFakeClock(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)), stats: &fixedStats{snap: &stats.Snapshot{Summary: summary}}}
	cfg := Config{Pressure: stats.NewPressure(th, time.Minute), MaxPodGracePeriod: 20 * time.Second, Stats: tm.stats,
		Pods: func() []*corev1.Pod { return pods },
		Evict: func(_ context.Context, p *corev1.Pod, e podsync.Ending) error {
			if tm.failing[p.Name] {
				return errors.New("containerd is down")
			}
			tm.evicted = append(tm.evicted, p.Name)
			tm.evictions[p.Name] = e
			return nil
		},
		Recorder: tm.recorder, Clock: tm.clock, Log: slog.New(slog.DiscardHandler)}
	if reclaim {
		cfg.ReclaimDisk = func(context.Context) error {
			tm.reclaimed++
			if tm.reclaim != nil {
				tm.reclaim()
			}
			return nil
		}
	}
	tm.Manager = New(cfg)
	return tm
}

func nodeMemory(available, workingSet int64, at time.Time) statsapi.NodeStats {
	a, ws := uint64(available*mi), uint64(workingSet*mi)
	return statsapi.NodeStats{Memory: &statsapi.MemoryStats{Time: metav1.NewTime(at), AvailableBytes: &a, WorkingSetBytes: &ws}}
}

// Under a crossed hard threshold the manager evicts one pod per look, the first in the
// kubelet's order that is not critical, with the kubelet's status and Event.
func TestSynchronizeEvictsOnePodAtATime(t *testing.T) {
	static := pod("static", 0, 0, 0)
	static.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	critical := pod("critical", 0, 0, 2000001000)
	hog, guaranteed := pod("hog", 0, 0, 0), pod("guaranteed", 100, 100, 0)
	pods := []*corev1.Pod{guaranteed, critical, static, hog}
	tm0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	summary := statsapi.Summary{Node: nodeMemory(50, 900, tm0), Pods: []statsapi.PodStats{
		memoryStats(static, 900), memoryStats(critical, 800), memoryStats(hog, 400), memoryStats(guaranteed, 50)}}
	tm := newTestManager(t, "memory.available<100Mi", pods, summary, false)

	tm.failing["hog"] = true // not evicted: the next in line is
	if got := tm.synchronize(t.Context()); got == nil || got.Name != "guaranteed" {
		t.Fatalf("evicted %v, want guaranteed after hog failed", got)
	}
	// The same sample again, taken before that eviction: nobody else goes for it.
	tm.failing["hog"] = false
	tm.clock.Step(monitoringInterval)
	if got := tm.synchronize(t.Context()); got != nil {
		t.Fatalf("evicted %s on a sample older than the last eviction", got.Name)
	}
	tm.stats.snap.Summary.Node.Memory.Time = metav1.NewTime(tm.clock.Now())
	if got := tm.synchronize(t.Context()); got == nil || got.Name != "hog" {
		t.Fatalf("evicted %v, want hog", got)
	}
	if want := "guaranteed hog"; strings.Join(tm.evicted, " ") != want {
		t.Errorf("evicted %v, want %s: static and system-critical pods are never evicted", tm.evicted, want)
	}
	e := tm.evictions["hog"]
	if e.Grace != time.Second || e.Condition == nil || e.Condition.Type != corev1.DisruptionTarget || e.Condition.Reason != corev1.PodReasonTerminationByKubelet ||
		!strings.HasPrefix(e.Message, "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container app was using 400Mi") {
		t.Errorf("hog's eviction %+v", e)
	}
	events := strings.Join([]string{<-tm.recorder.Events, <-tm.recorder.Events, <-tm.recorder.Events}, "\n")
	if !strings.Contains(events, "Warning Evicted The node was low on resource: memory.") {
		t.Errorf("events:\n%s", events)
	}

	// Above the threshold: nobody goes.
	tm = newTestManager(t, "memory.available<10Mi", pods, summary, false)
	if got := tm.synchronize(t.Context()); got != nil {
		t.Errorf("evicted %s with 50Mi available over a 10Mi threshold", got.Name)
	}
}

// Disk pressure reclaims node-level resources first (finished pods' containers, unused
// images) and looks again, as the kubelet's reclaimNodeLevelResources: when the fresh
// sample meets no threshold, minimum reclaim included, nobody goes; otherwise a pod goes
// in the same look.
func TestSynchronizeReclaimsDiskFirst(t *testing.T) {
	capacity := uint64(100 * mi)
	summary := func(avail uint64) statsapi.Summary {
		return statsapi.Summary{Node: statsapi.NodeStats{Fs: &statsapi.FsStats{AvailableBytes: &avail, CapacityBytes: &capacity}}}
	}
	writer := pod("writer", 0, 0, 0)
	th, err := stats.ParseThresholdConfig(stats.EvictionFlags{Hard: "nodefs.available<10%", MinimumReclaim: "nodefs.available=5Mi"})
	if err != nil {
		t.Fatal(err)
	}
	tm := newTestManagerOn(th, []*corev1.Pod{writer}, summary(5*mi), true)
	sampled := 0
	tm.stats.onSample = func() { sampled++ }
	tm.reclaim = func() { tm.stats.snap.Summary = summary(16 * mi) } // 1Mi past the threshold and its reclaim
	if got := tm.synchronize(t.Context()); got != nil || tm.reclaimed != 1 || sampled != 1 {
		t.Errorf("evicted %v, reclaimed %d times, sampled %d times: want a reclaim and a fresh sample that spare the pod", got, tm.reclaimed, sampled)
	}

	tm = newTestManagerOn(th, []*corev1.Pod{writer}, summary(5*mi), true)
	tm.reclaim = func() { tm.stats.snap.Summary = summary(12 * mi) } // above 10Mi, short of the 5Mi reclaim
	if got := tm.synchronize(t.Context()); got == nil || tm.reclaimed != 1 ||
		!strings.HasPrefix(tm.evictions["writer"].Message, "The node was low on resource: ephemeral-storage. Threshold quantity: 10Mi, available: 5Mi. ") {
		t.Errorf("evicted %v after a reclaim short of the minimum: %+v", got, tm.evictions)
	}
}

// A pod past its storage limit goes whatever the node's thresholds, with the kubelet's
// message and no DisruptionTarget condition.
func TestSynchronizeEvictsPodsPastStorageLimits(t *testing.T) {
	p := pod("writer", 0, 0, 0)
	p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Mi"))}}}}
	used := uint64(2 * mi)
	summary := statsapi.Summary{Pods: []statsapi.PodStats{{PodRef: statsapi.PodReference{UID: "writer"},
		VolumeStats: []statsapi.VolumeStats{{Name: "scratch", FsStats: statsapi.FsStats{UsedBytes: &used}}}}}}
	tm := newTestManager(t, "memory.available<100Mi", []*corev1.Pod{p}, summary, false)
	if got := tm.synchronize(t.Context()); got == nil {
		t.Fatal("the pod past its emptyDir's sizeLimit stays")
	}
	if e := tm.evictions["writer"]; e.Message != `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ` || e.Condition != nil || e.Grace != time.Second {
		t.Errorf("eviction %+v", e)
	}
}

// A soft threshold evicts only once crossed for its grace period, and gives the pod its
// terminationGracePeriodSeconds capped at --eviction-max-pod-grace-period.
func TestSynchronizeSoftThreshold(t *testing.T) {
	th, err := stats.ParseThresholdConfig(stats.EvictionFlags{Soft: "memory.available<100Mi", SoftGracePeriod: "memory.available=30s"})
	if err != nil {
		t.Fatal(err)
	}
	patient, quick := pod("patient", 0, 0, 0), pod("quick", 0, 0, 0)
	patient.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60)
	quick.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
	tm0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	summary := statsapi.Summary{Node: nodeMemory(50, 900, tm0), Pods: []statsapi.PodStats{memoryStats(patient, 400), memoryStats(quick, 300)}}
	tm := newTestManagerOn(th, []*corev1.Pod{patient, quick}, summary, false)
	for range 3 { // 0s, 10s, 20s into the grace period
		if got := tm.synchronize(t.Context()); got != nil {
			t.Fatalf("evicted %s at %s, inside the soft threshold's grace period", got.Name, tm.clock.Now().Sub(tm0))
		}
		tm.clock.Step(monitoringInterval)
	}
	if got := tm.synchronize(t.Context()); got == nil || got.Name != "patient" {
		t.Fatalf("evicted %v after the grace period, want patient", got)
	}
	if g := tm.evictions["patient"].Grace; g != 20*time.Second {
		t.Errorf("patient (terminationGracePeriodSeconds 60) stopped with %s, want the 20s max-pod-grace-period", g)
	}
	tm.cfg.Pods = func() []*corev1.Pod { return []*corev1.Pod{quick} } // patient is gone
	tm.stats.snap.Summary.Node.Memory.Time = metav1.NewTime(tm.clock.Now().Add(time.Second))
	tm.clock.Step(monitoringInterval)
	if got := tm.synchronize(t.Context()); got == nil || got.Name != "quick" || tm.evictions["quick"].Grace != 5*time.Second {
		t.Errorf("evicted %v with %+v, want quick with its own 5s", got, tm.evictions["quick"])
	}
}
