package scheduler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfiguration(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c, err := LoadConfiguration(write(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: packer
  plugins:
    score:
      disabled: [{name: NodeResourcesBalancedAllocation}, {name: ImageLocality}]
      enabled: [{name: NodeResourcesFit, weight: 5}]
    filter:
      disabled: [{name: TaintToleration}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Profiles[1].resolve()
	if err != nil {
		t.Fatal(err)
	}
	if r.weights["NodeResourcesFit"] != 5 || strings.Contains(strings.Join(r.points[score], ","), "ImageLocality") ||
		strings.Contains(strings.Join(r.points[filter], ","), "TaintToleration") || !strings.Contains(strings.Join(r.points[score], ","), "TaintToleration") {
		t.Errorf("resolved: %+v", r)
	}
	for _, bad := range []string{
		"apiVersion: v1\nkind: Pod\n",
		"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: [{schedulerName: a}, {schedulerName: a}]\n",
		"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nbogus: 1\n",
		"apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: [{plugins: {filter: {enabled: [{name: Nope}]}}}]\n",
	} {
		c, err := LoadConfiguration(write(bad))
		if err == nil {
			_, err = c.Profiles[0].resolve()
		}
		if err == nil {
			t.Errorf("accepted:\n%s", bad)
		}
	}
}
