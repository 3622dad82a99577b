// Package plugins lists the in-tree plugins by name, with kube-scheduler's default
// profile: which plugins run and their score weights.
package plugins

import (
	"encoding/json"
	"fmt"

	"github.com/minik8s/minik8s/pkg/control/scheduler/framework"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/defaultbinder"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/defaultpreemption"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/dynamicresources"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/imagelocality"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/interpodaffinity"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/nodeaffinity"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/nodedeclaredfeatures"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/nodename"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/nodeports"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/noderesources"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/nodeunschedulable"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/podtopologyspread"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/tainttoleration"
	"github.com/minik8s/minik8s/pkg/control/scheduler/plugins/volumebinding"
)

// Factory makes a plugin from its pluginConfig args (nil when none were given).
type Factory func(h framework.Handle, args json.RawMessage) (framework.Plugin, error)

func noArgs(f func(framework.Handle) (framework.Plugin, error)) Factory {
	return func(h framework.Handle, args json.RawMessage) (framework.Plugin, error) {
		if len(args) > 0 && string(args) != "null" && string(args) != "{}" {
			return nil, fmt.Errorf("takes no args")
		}
		return f(h)
	}
}

// Registry maps every plugin name to its factory.
var Registry = map[string]Factory{
	nodeunschedulable.Name: noArgs(nodeunschedulable.New),
	nodename.Name:          noArgs(nodename.New),
	tainttoleration.Name:   noArgs(tainttoleration.New),
	nodeaffinity.Name:      noArgs(nodeaffinity.New),
	nodeports.Name:         noArgs(nodeports.New),
	noderesources.FitName: func(_ framework.Handle, raw json.RawMessage) (framework.Plugin, error) {
		var args *noderesources.FitArgs
		if len(raw) > 0 {
			args = &noderesources.FitArgs{}
			if err := json.Unmarshal(raw, args); err != nil {
				return nil, err
			}
		}
		return noderesources.NewFit(args)
	},
	noderesources.BalancedName: noArgs(func(framework.Handle) (framework.Plugin, error) { return noderesources.NewBalanced(), nil }),
	volumebinding.Name:         noArgs(volumebinding.New),
	podtopologyspread.Name:     noArgs(podtopologyspread.New),
	interpodaffinity.Name:      noArgs(interpodaffinity.New),
	imagelocality.Name:         noArgs(imagelocality.New),
	dynamicresources.Name:      noArgs(dynamicresources.New),
	defaultpreemption.Name:     noArgs(defaultpreemption.New),
	defaultbinder.Name:         noArgs(defaultbinder.New),
	nodedeclaredfeatures.Name:  noArgs(nodedeclaredfeatures.New),
}

// Weighted is a plugin of a profile with its score weight.
type Weighted struct {
	Name   string
	Weight int64
}

// Defaults is kube-scheduler's default profile, in its order (filters run in this order),
// with its default score weights (0: the plugin does not score).
var Defaults = []Weighted{
	{nodeunschedulable.Name, 0},
	{nodename.Name, 0},
	{tainttoleration.Name, 3},
	{nodeaffinity.Name, 2},
	{nodeports.Name, 0},
	{noderesources.FitName, 1},
	{volumebinding.Name, 0},
	{podtopologyspread.Name, 2},
	{interpodaffinity.Name, 2},
	{dynamicresources.Name, 0}, // kube-scheduler adds it before DefaultPreemption
	{defaultpreemption.Name, 0},
	{noderesources.BalancedName, 1},
	{imagelocality.Name, 1},
	{defaultbinder.Name, 0},
	{nodedeclaredfeatures.Name, 0}, // kube-scheduler appends it, its gate being on in 1.36
}
