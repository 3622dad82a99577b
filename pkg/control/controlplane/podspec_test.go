package controlplane

import (
	"strings"
	"testing"
)

// TestInvalidSchedulingAsKubectlShows: a pod whose affinity or topology spread kube's
// ValidatePodSpec refuses is refused here too, with kube-apiserver's words as kubectl
// prints them (before, the scheduler met them and the pod stayed Pending).
func TestInvalidSchedulingAsKubectlShows(t *testing.T) {
	c := startCluster(t)
	for _, bad := range []struct{ yaml, want string }{
		{`apiVersion: v1
kind: Pod
metadata: {name: bad-affinity}
spec:
  containers: [{name: app, image: busybox}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchFields: [{key: spec.nodeName, operator: In, values: [node-1]}]
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 0
        podAffinityTerm: {labelSelector: {matchLabels: {app: web}}, topologyKey: kubernetes.io/hostname}
`, `The Pod "bad-affinity" is invalid: 
* spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key: Invalid value: "spec.nodeName": not a valid field selector key
* spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100`},
		{`apiVersion: v1
kind: Pod
metadata: {name: bad-spread}
spec:
  containers: [{name: app, image: busybox}]
  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, minDomains: 2, labelSelector: {matchLabels: {app: web}}}
`, `The Pod "bad-spread" is invalid: spec.topologySpreadConstraints[0].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway`},
	} {
		out, err := c.kubectl(t, bad.yaml, "create", "-f", "-")
		if err == nil || !strings.Contains(out, bad.want) {
			t.Errorf("want %q, got %v\n%s", bad.want, err, out)
		}
	}
}
