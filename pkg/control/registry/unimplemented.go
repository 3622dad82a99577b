package registry

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podSpecWarnings names the parts of a pod spec minilet does not carry out yet, so a user
// learns it at `kubectl apply` instead of finding out later. Remove a line here with the
// change that implements it.
func podSpecWarnings(spec *corev1.PodSpec, path *field.Path) []string {
	var out []string
	warn := func(p *field.Path, what string) { out = append(out, fmt.Sprintf("%s: %s", p, what)) }
	if len(spec.InitContainers) > 0 {
		warn(path.Child("initContainers"), "minilet does not run init containers yet; the app containers start without them")
	}
	for i, v := range spec.Volumes {
		warn(path.Child("volumes").Index(i), fmt.Sprintf("volume %q is not mounted: minilet has no volumes yet", v.Name))
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		p := path.Child("containers").Index(i)
		for name, probe := range map[string]*corev1.Probe{"livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe, "startupProbe": c.StartupProbe} {
			if probe != nil && probe.Exec != nil {
				warn(p.Child(name, "exec"), "exec probes are not run by minilet yet: the probe never succeeds")
			}
		}
		if len(c.Resources.Limits) > 0 {
			warn(p.Child("resources", "limits"), "not enforced: minilet sets no cgroup limits yet")
		}
		if c.Lifecycle != nil && (c.Lifecycle.PostStart != nil || c.Lifecycle.PreStop != nil) {
			warn(p.Child("lifecycle"), "postStart and preStop hooks are not run yet")
		}
	}
	return out
}

// templateWarnings is podSpecWarnings for a workload's pod template.
func templateWarnings(t *corev1.PodTemplateSpec, path *field.Path) []string {
	return podSpecWarnings(&t.Spec, path.Child("template", "spec"))
}
