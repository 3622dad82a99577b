package podautoscaler

import (
	"math"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/utils/ptr"
)

// history remembers, per autoscaler, its recent recommendations (for stabilization) and
// its recent scale changes (for the rate policies), as kube-controller-manager keeps them
// in memory: a restart forgets them.
type history struct {
	mu              sync.Mutex
	recommendations map[string][]timestamped
	scaleUps        map[string][]timestamped
	scaleDowns      map[string][]timestamped
}

type timestamped struct {
	at    time.Time
	value int32 // a recommendation, or a change in replicas
}

func newHistory() *history {
	return &history{recommendations: map[string][]timestamped{}, scaleUps: map[string][]timestamped{}, scaleDowns: map[string][]timestamped{}}
}

func (h *history) forget(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.recommendations, key)
	delete(h.scaleUps, key)
	delete(h.scaleDowns, key)
}

// recordInitial remembers the target's current replicas as the first recommendation of an
// autoscaler that has none, as kube's recordInitialRecommendation: a fresh autoscaler then
// scales down only once the stabilization window has passed since it first saw the target.
func (h *history) recordInitial(key string, current int32, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.recommendations[key] == nil {
		h.recommendations[key] = []timestamped{{at: now, value: current}}
	}
}

// limit is the outcome of normalizing: the replica count, and the AbleToScale and
// ScalingLimited reasons that explain it.
type limit struct {
	replicas                  int32
	ableReason, ableMessage   string
	limitReason, limitMessage string
	limited                   bool
}

// normalize applies stabilization and the min/max and rate limits to a recommendation,
// with the autoscaler's behavior or, without one, the controller's defaults (5 minutes of
// downscale stabilization, at most double or 4 more replicas at once).
func (h *history) normalize(key string, hpa *autoscalingv2.HorizontalPodAutoscaler, current, desired, minReplicas int32, now time.Time, downscaleWindow time.Duration) limit {
	var stabilized int32
	var out limit
	if hpa.Spec.Behavior == nil {
		stabilized = h.stabilizeDown(key, desired, now, downscaleWindow)
		out.replicas, out.limitReason, out.limitMessage = withinRules(current, stabilized, minReplicas, hpa.Spec.MaxReplicas)
	} else {
		up, down := hpa.Spec.Behavior.ScaleUp, hpa.Spec.Behavior.ScaleDown
		var reason, message string
		stabilized, reason, message = h.stabilizeWithBehavior(key, current, desired, up, down, now, downscaleWindow)
		out.ableReason, out.ableMessage = reason, message
		out.replicas, out.limitReason, out.limitMessage = h.withinRates(key, current, stabilized, minReplicas, hpa.Spec.MaxReplicas, up, down, now)
	}
	if stabilized == desired {
		out.ableReason, out.ableMessage = "ReadyForNewScale", "recommended size matches current size"
	} else if hpa.Spec.Behavior == nil {
		out.ableReason, out.ableMessage = "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation"
	}
	out.limited = out.replicas != stabilized
	return out
}

// stabilizeDown is the highest recommendation within the window (and records this one).
func (h *history) stabilizeDown(key string, desired int32, now time.Time, window time.Duration) int32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	highest := desired
	cutoff := now.Add(-window)
	kept := h.recommendations[key][:0]
	for _, r := range h.recommendations[key] {
		if r.at.Before(cutoff) {
			continue
		}
		kept = append(kept, r)
		highest = max(highest, r.value)
	}
	h.recommendations[key] = append(kept, timestamped{at: now, value: desired})
	return highest
}

// stabilizeWithBehavior keeps the replicas between the lowest recommendation of the
// scale-up window and the highest of the scale-down window; a scale-down window left
// unset is the controller's (downscaleWindow), as kube's.
func (h *history) stabilizeWithBehavior(key string, current, desired int32, up, down *autoscalingv2.HPAScalingRules, now time.Time, downscaleWindow time.Duration) (int32, string, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	upCutoff := now.Add(-time.Duration(ptr.Deref(up.StabilizationWindowSeconds, 0)) * time.Second)
	downCutoff := now.Add(-downscaleWindow)
	if down.StabilizationWindowSeconds != nil {
		downCutoff = now.Add(-time.Duration(*down.StabilizationWindowSeconds) * time.Second)
	}
	upRec, downRec := desired, desired
	kept := h.recommendations[key][:0]
	for _, r := range h.recommendations[key] {
		if r.at.Before(upCutoff) && r.at.Before(downCutoff) {
			continue
		}
		if r.at.After(upCutoff) {
			upRec = min(upRec, r.value)
		}
		if r.at.After(downCutoff) {
			downRec = max(downRec, r.value)
		}
		kept = append(kept, r)
	}
	h.recommendations[key] = append(kept, timestamped{at: now, value: desired})
	rec := max(current, upRec)
	rec = min(rec, downRec)
	if desired >= current {
		return rec, "ScaleUpStabilized", "recent recommendations were lower than current one, applying the lowest recent recommendation"
	}
	return rec, "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation"
}

// withinRules bounds a recommendation by min, max and the default scale-up limit.
func withinRules(current, desired, minReplicas, maxReplicas int32) (int32, string, string) {
	upLimit := max(2*current, 4)
	maxAllowed, reason, message := maxReplicas, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
	if maxReplicas > upLimit {
		maxAllowed, reason, message = upLimit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
	}
	switch {
	case desired < minReplicas:
		return minReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
	case desired > maxAllowed:
		return maxAllowed, reason, message
	}
	return desired, "DesiredWithinRange", "the desired count is within the acceptable range"
}

// withinRates bounds a recommendation by min, max and the behavior's rate policies over
// the scale changes of their periods.
func (h *history) withinRates(key string, current, desired, minReplicas, maxReplicas int32, up, down *autoscalingv2.HPAScalingRules, now time.Time) (int32, string, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ups, downs := h.scaleUps[key], h.scaleDowns[key]
	switch {
	case desired > current:
		upLimit := max(current, rateLimit(current, ups, downs, up, now, true))
		maxAllowed, reason, message := maxReplicas, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
		if maxReplicas > upLimit {
			maxAllowed, reason, message = upLimit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
		}
		if desired > maxAllowed {
			return maxAllowed, reason, message
		}
	case desired < current:
		downLimit := min(current, rateLimit(current, ups, downs, down, now, false))
		minAllowed, reason, message := minReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
		if minReplicas < downLimit {
			minAllowed, reason, message = downLimit, "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate"
		}
		if desired < minAllowed {
			return minAllowed, reason, message
		}
	}
	return desired, "DesiredWithinRange", "the desired count is within the acceptable range"
}

// rateLimit is how far the policies let the replicas go (up or down) from where each
// policy's period started; selectPolicy picks the largest or smallest change.
func rateLimit(current int32, ups, downs []timestamped, rules *autoscalingv2.HPAScalingRules, now time.Time, scaleUp bool) int32 {
	sel := ptr.Deref(rules.SelectPolicy, autoscalingv2.MaxChangePolicySelect)
	if sel == autoscalingv2.DisabledPolicySelect {
		return current
	}
	// The largest change up is the highest limit; the largest change down the lowest.
	pickHigh := (sel == autoscalingv2.MaxChangePolicySelect) == scaleUp
	result := int32(math.MinInt32)
	if !pickHigh {
		result = math.MaxInt32
	}
	for _, p := range rules.Policies {
		start := current - changedWithin(p.PeriodSeconds, ups, now) + changedWithin(p.PeriodSeconds, downs, now)
		var proposed int32
		switch {
		case p.Type == autoscalingv2.PodsScalingPolicy && scaleUp:
			proposed = start + p.Value
		case p.Type == autoscalingv2.PodsScalingPolicy:
			proposed = start - p.Value
		case scaleUp: // Percent, rounded up so that a small target can still grow
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		default:
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		if pickHigh {
			result = max(result, proposed)
		} else {
			result = min(result, proposed)
		}
	}
	return result
}

// changedWithin sums the changes recorded within the last period.
func changedWithin(periodSeconds int32, events []timestamped, now time.Time) int32 {
	cutoff := now.Add(-time.Duration(periodSeconds) * time.Second)
	var sum int32
	for _, e := range events {
		if e.at.After(cutoff) {
			sum += e.value
		}
	}
	return sum
}

// recordScale remembers a scale change for the rate policies (only autoscalers with a
// behavior use them), dropping changes older than the longest policy period.
func (h *history) recordScale(key string, behavior *autoscalingv2.HorizontalPodAutoscalerBehavior, from, to int32, now time.Time) {
	if behavior == nil || from == to {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	list, rules, change := h.scaleUps, behavior.ScaleUp, to-from
	if to < from {
		list, rules, change = h.scaleDowns, behavior.ScaleDown, from-to
	}
	var longest int32
	for _, p := range rules.Policies {
		longest = max(longest, p.PeriodSeconds)
	}
	cutoff := now.Add(-time.Duration(longest) * time.Second)
	kept := list[key][:0]
	for _, e := range list[key] {
		if e.at.After(cutoff) {
			kept = append(kept, e)
		}
	}
	list[key] = append(kept, timestamped{at: now, value: change})
}
