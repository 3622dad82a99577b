package scheduler

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Configuration is the subset of KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1)
// miniapi reads from --scheduler-config: profiles by schedulerName with plugins enabled,
// disabled and weighted, plugin args, percentageOfNodesToScore and the back-off bounds.
type Configuration struct {
	APIVersion               string    `json:"apiVersion"`
	Kind                     string    `json:"kind"`
	Parallelism              int       `json:"parallelism,omitempty"`
	PercentageOfNodesToScore *int32    `json:"percentageOfNodesToScore,omitempty"`
	PodInitialBackoffSeconds *int64    `json:"podInitialBackoffSeconds,omitempty"`
	PodMaxBackoffSeconds     *int64    `json:"podMaxBackoffSeconds,omitempty"`
	Profiles                 []Profile `json:"profiles,omitempty"`
	// Accepted and not acted upon: miniapi's own flags set these.
	LeaderElection     json.RawMessage `json:"leaderElection,omitempty"`
	ClientConnection   json.RawMessage `json:"clientConnection,omitempty"`
	HealthzBindAddress string          `json:"healthzBindAddress,omitempty"`
	MetricsBindAddress string          `json:"metricsBindAddress,omitempty"`
}

// Profile is one scheduler name's plugin set.
type Profile struct {
	SchedulerName            string         `json:"schedulerName,omitempty"`
	PercentageOfNodesToScore *int32         `json:"percentageOfNodesToScore,omitempty"`
	Plugins                  *Plugins       `json:"plugins,omitempty"`
	PluginConfig             []PluginConfig `json:"pluginConfig,omitempty"`
}

// Plugins are the plugin sets per extension point.
type Plugins struct {
	PreEnqueue PluginSet `json:"preEnqueue,omitempty"`
	QueueSort  PluginSet `json:"queueSort,omitempty"`
	PreFilter  PluginSet `json:"preFilter,omitempty"`
	Filter     PluginSet `json:"filter,omitempty"`
	PostFilter PluginSet `json:"postFilter,omitempty"`
	PreScore   PluginSet `json:"preScore,omitempty"`
	Score      PluginSet `json:"score,omitempty"`
	Reserve    PluginSet `json:"reserve,omitempty"`
	Permit     PluginSet `json:"permit,omitempty"`
	PreBind    PluginSet `json:"preBind,omitempty"`
	Bind       PluginSet `json:"bind,omitempty"`
	PostBind   PluginSet `json:"postBind,omitempty"`
	MultiPoint PluginSet `json:"multiPoint,omitempty"`
}

// PluginSet enables and disables plugins ("*" disables every default).
type PluginSet struct {
	Enabled  []Plugin `json:"enabled,omitempty"`
	Disabled []Plugin `json:"disabled,omitempty"`
}

// Plugin names a plugin, with its score weight.
type Plugin struct {
	Name   string `json:"name"`
	Weight *int32 `json:"weight,omitempty"`
}

// PluginConfig is a plugin's args.
type PluginConfig struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// DefaultConfiguration is one profile, default-scheduler, with kube-scheduler's defaults.
func DefaultConfiguration() *Configuration {
	return &Configuration{Profiles: []Profile{{SchedulerName: corev1.DefaultSchedulerName}}}
}

// LoadConfiguration reads a KubeSchedulerConfiguration file ("" gives the defaults).
func LoadConfiguration(path string) (*Configuration, error) {
	if path == "" {
		return DefaultConfiguration(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--scheduler-config: %w", err)
	}
	c := &Configuration{}
	if err := yaml.UnmarshalStrict(data, c); err != nil {
		return nil, fmt.Errorf("--scheduler-config %s: %w", path, err)
	}
	if c.Kind != "KubeSchedulerConfiguration" || (c.APIVersion != "kubescheduler.config.k8s.io/v1" && c.APIVersion != "kubescheduler.config.k8s.io/v1beta3") {
		return nil, fmt.Errorf("--scheduler-config %s: apiVersion/kind %s/%s, want kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration", path, c.APIVersion, c.Kind)
	}
	if len(c.Profiles) == 0 {
		c.Profiles = DefaultConfiguration().Profiles
	}
	seen := map[string]bool{}
	for i := range c.Profiles {
		p := &c.Profiles[i]
		if p.SchedulerName == "" {
			p.SchedulerName = corev1.DefaultSchedulerName
		}
		if seen[p.SchedulerName] {
			return nil, fmt.Errorf("--scheduler-config %s: profiles[%d]: duplicate schedulerName %q", path, i, p.SchedulerName)
		}
		seen[p.SchedulerName] = true
	}
	if v := c.PercentageOfNodesToScore; v != nil && (*v < 0 || *v > 100) {
		return nil, fmt.Errorf("--scheduler-config %s: percentageOfNodesToScore %d is not within 0..100", path, *v)
	}
	return c, nil
}

// point is an extension point a plugin may be enabled at.
type point int

const (
	preFilter point = iota
	filter
	postFilter
	preScore
	score
	reserve
	preBind
	bind
	numPoints
)

// resolved is a profile's plugins per extension point, in order, and score weights.
type resolved struct {
	points  [numPoints][]string
	weights map[string]int64
}

// resolve applies multiPoint and then each point's enabled/disabled lists to the defaults.
// Only plugins implementing a point's interface run at it, so multiPoint lists each
// plugin once.
func (p *Profile) resolve() (*resolved, error) {
	r := &resolved{weights: map[string]int64{}}
	var multi []string
	for _, d := range plugins.Defaults {
		multi = append(multi, d.Name)
		if d.Weight > 0 {
			r.weights[d.Name] = d.Weight
		}
	}
	var ps Plugins
	if p.Plugins != nil {
		ps = *p.Plugins
	}
	var err error
	if multi, err = apply(multi, ps.MultiPoint, r.weights); err != nil {
		return nil, fmt.Errorf("profile %s: multiPoint: %w", p.SchedulerName, err)
	}
	sets := [numPoints]PluginSet{ps.PreFilter, ps.Filter, ps.PostFilter, ps.PreScore, ps.Score, ps.Reserve, ps.PreBind, ps.Bind}
	names := [numPoints]string{"preFilter", "filter", "postFilter", "preScore", "score", "reserve", "preBind", "bind"}
	for i := range sets {
		if r.points[i], err = apply(append([]string(nil), multi...), sets[i], r.weights); err != nil {
			return nil, fmt.Errorf("profile %s: %s: %w", p.SchedulerName, names[i], err)
		}
	}
	return r, nil
}

func apply(list []string, set PluginSet, weights map[string]int64) ([]string, error) {
	for _, d := range set.Disabled {
		if d.Name == "*" {
			list = nil
			continue
		}
		if _, ok := plugins.Registry[d.Name]; !ok {
			return nil, fmt.Errorf("disabled plugin %q is not a known plugin", d.Name)
		}
		out := list[:0]
		for _, n := range list {
			if n != d.Name {
				out = append(out, n)
			}
		}
		list = out
	}
	for _, e := range set.Enabled {
		if _, ok := plugins.Registry[e.Name]; !ok {
			return nil, fmt.Errorf("enabled plugin %q is not a known plugin", e.Name)
		}
		if e.Weight != nil {
			if *e.Weight < 0 || *e.Weight > 100 {
				return nil, fmt.Errorf("plugin %q: weight %d is not within 0..100", e.Name, *e.Weight)
			}
			weights[e.Name] = int64(*e.Weight)
		}
		present := false
		for _, n := range list {
			present = present || n == e.Name
		}
		if !present {
			list = append(list, e.Name)
		}
	}
	return list, nil
}
