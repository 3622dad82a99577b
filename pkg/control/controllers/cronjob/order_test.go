package cronjob

import (
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestByStartTime: oldest first; a tie (one second) by name, so the newer of two Jobs
// started in one second is never the one history cleanup deletes; unstarted Jobs last.
func TestByStartTime(t *testing.T) {
	at := func(sec int) *metav1.Time { v := metav1.NewTime(time.Unix(int64(sec), 0)); return &v }
	job := func(name string, start *metav1.Time) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: batchv1.JobStatus{StartTime: start}}
	}
	for range 20 { // SortFunc is not stable: an order that held by chance would not hold every time
		jobs := []*batchv1.Job{job("tick-3", nil), job("tick-2", at(100)), job("tick-1", at(100)), job("tick-0", at(50))}
		slices.SortFunc(jobs, byStartTime)
		var names []string
		for _, j := range jobs {
			names = append(names, j.Name)
		}
		if !slices.Equal(names, []string{"tick-0", "tick-1", "tick-2", "tick-3"}) {
			t.Fatalf("order %v", names)
		}
	}
}
