package cronjob

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
)

// A schedule that parses but never fires (February 31st) is refused at once with
// Kubernetes' reason, rather than walked through half a million empty start times.
func TestMostRecentImpossibleSchedule(t *testing.T) {
	sched, err := cron.ParseStandard("59 23 31 2 *")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	start := time.Now()
	_, _, err = mostRecent(sched, time.UTC, now.Add(-time.Hour), now)
	if took := time.Since(start); took > time.Second {
		t.Errorf("mostRecent took %v", took)
	}
	if err == nil || err.Error() != "time difference between two schedules is less than 1 second" {
		t.Errorf("err %v, want Kubernetes' invalid schedule reason", err)
	}
}

// The last start time in (earliest, now] and how many there were.
func TestMostRecent(t *testing.T) {
	sched, err := cron.ParseStandard("*/5 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	at := func(m int) time.Time { return time.Date(2026, 12, 1, 3, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		earliest, now, want time.Time
		n                   int
	}{
		{at(0), at(4), time.Time{}, 0},
		{at(0), at(5), at(5), 1},
		{at(1), at(23), at(20), 4},
	} {
		got, n, err := mostRecent(sched, time.UTC, tc.earliest, tc.now)
		if err != nil || !got.Equal(tc.want) || n != tc.n {
			t.Errorf("mostRecent(%v, %v) = %v, %d, %v; want %v, %d", tc.earliest, tc.now, got, n, err, tc.want, tc.n)
		}
	}
}

// The scheduled-timestamp annotation is in the CronJob's time zone, and in UTC without one
// whatever the controller's own zone, as kube-controller-manager writes it.
func TestScheduledTimestampZone(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	controllerZone := time.FixedZone("controller", 3600)
	scheduled := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC).In(controllerZone)
	cj := &batchv1.CronJob{}
	if got := newJob(cj, "x", scheduled, controllerZone).Annotations[ScheduledTimestampAnnotation]; got != "2026-12-01T03:00:00Z" {
		t.Errorf("without timeZone: %s, want 2026-12-01T03:00:00Z", got)
	}
	cj.Spec.TimeZone = ptr.To("Asia/Tokyo")
	if got := newJob(cj, "x", scheduled, tokyo).Annotations[ScheduledTimestampAnnotation]; got != "2026-12-01T12:00:00+09:00" {
		t.Errorf("timeZone Asia/Tokyo: %s, want 2026-12-01T12:00:00+09:00", got)
	}
}
