package cronjob

import (
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
)

// tooManyMissed is how many missed start times make the controller warn, as Kubernetes does.
const tooManyMissed = 100

// maxScan bounds the walk over missed start times of a CronJob idle for a long time.
const maxScan = 500000

// errTimeZone marks a time zone this machine does not know.
var errTimeZone = errors.New("invalid timeZone")

// schedule parses the CronJob's schedule in its time zone (the process's when unset).
func schedule(cj *batchv1.CronJob) (cron.Schedule, *time.Location, error) {
	loc := time.Local
	if tz := cj.Spec.TimeZone; tz != nil {
		var err error
		if loc, err = time.LoadLocation(*tz); err != nil {
			return nil, nil, fmt.Errorf("%w: %q: %w", errTimeZone, *tz, err)
		}
	}
	sched, err := cron.ParseStandard(cj.Spec.Schedule)
	if err != nil {
		return nil, nil, fmt.Errorf("unparseable schedule: %q : %w", cj.Spec.Schedule, err)
	}
	return sched, loc, nil
}

// errNeverFires is Kubernetes' reason for a schedule that parses but has no start time
// (February 31st): the cron library then answers the zero time.
var errNeverFires = errors.New("time difference between two schedules is less than 1 second")

// mostRecent is the latest start time in (earliest, now], and how many there were; zero when
// none is due.
func mostRecent(sched cron.Schedule, loc *time.Location, earliest, now time.Time) (time.Time, int, error) {
	t1 := sched.Next(earliest.In(loc))
	if t2 := sched.Next(t1); !now.Before(t2) && t2.Sub(t1).Round(time.Second) < time.Second {
		return time.Time{}, 0, errNeverFires
	}
	var last time.Time
	n := 0
	for t := t1; !t.After(now) && n < maxScan; t = sched.Next(t) {
		last = t
		n++
	}
	return last, n, nil
}

// jobName is <cronjob>-<scheduled time in minutes since the epoch>, so one start time makes
// one Job whoever retries.
func jobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60)
}
