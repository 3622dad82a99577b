package apps

import (
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func intOrString(v any) *intstr.IntOrString {
	if s, ok := v.(string); ok {
		return &intstr.IntOrString{Type: intstr.String, StrVal: s}
	}
	return &intstr.IntOrString{IntVal: int32(v.(int))}
}

const badPercent = `a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')`

// TestDeploymentStrategyErrors: a Deployment's bad strategy is refused with kube-apiserver
// 1.36's errors, in its order (as the real server printed them): an unknown type at
// spec.strategy with kube's internal struct as the value, a percentage that is no number
// counted as 0, 100% checked after 0.
func TestDeploymentStrategyErrors(t *testing.T) {
	for _, tc := range []struct {
		strategy appsv1.DeploymentStrategy
		want     []string
	}{
		{appsv1.DeploymentStrategy{Type: "Foo"},
			[]string{`spec.strategy: Unsupported value: {"Type":"Foo","RollingUpdate":null}: supported values: "Recreate", "RollingUpdate"`}},
		{appsv1.DeploymentStrategy{Type: "Foo", RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: intOrString(1)}},
			[]string{`spec.strategy: Unsupported value: {"Type":"Foo","RollingUpdate":{"MaxUnavailable":0,"MaxSurge":1}}: supported values: "Recreate", "RollingUpdate"`}},
		{appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: intOrString("abc"), MaxUnavailable: intOrString("5x%")}},
			[]string{
				`spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "5x%": ` + badPercent,
				`spec.strategy.rollingUpdate.maxSurge: Invalid value: "abc": ` + badPercent,
				"spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"5x%\": may not be 0 when `maxSurge` is 0",
			}},
		{appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: intOrString(-1), MaxUnavailable: intOrString("150%")}},
			[]string{
				`spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0`,
				`spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "150%": must not be greater than 100%`,
			}},
	} {
		d := registrytest.Deployment(map[string]string{"app": "web"})
		d.Spec.Strategy = tc.strategy
		if got := registrytest.Messages(registrytest.CreateSteps(DeploymentRules, d)); !slices.Equal(got, tc.want) {
			t.Errorf("strategy %+v: errors\n%q, want\n%q", tc.strategy, got, tc.want)
		}
	}
}

// TestDaemonSetUpdateStrategyErrors: likewise for a DaemonSet's updateStrategy.
func TestDaemonSetUpdateStrategyErrors(t *testing.T) {
	for _, tc := range []struct {
		strategy appsv1.DaemonSetUpdateStrategy
		want     []string
	}{
		{appsv1.DaemonSetUpdateStrategy{Type: "Foo"},
			[]string{`spec.updateStrategy: Unsupported value: {"Type":"Foo","RollingUpdate":null}: supported values: "RollingUpdate", "OnDelete"`}},
		{appsv1.DaemonSetUpdateStrategy{Type: "Foo", RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxSurge: intOrString(1)}},
			[]string{`spec.updateStrategy: Unsupported value: {"Type":"Foo","RollingUpdate":{"MaxUnavailable":0,"MaxSurge":1}}: supported values: "RollingUpdate", "OnDelete"`}},
		{appsv1.DaemonSetUpdateStrategy{RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxSurge: intOrString("abc"), MaxUnavailable: intOrString("5x%")}},
			[]string{
				`spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "5x%": ` + badPercent,
				`spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "abc": ` + badPercent,
				`spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0`,
			}},
		{appsv1.DaemonSetUpdateStrategy{RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxSurge: intOrString(-1), MaxUnavailable: intOrString("150%")}},
			[]string{
				`spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0`,
				`spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "150%": must not be greater than 100%`,
				`spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: -1: may not be set when maxUnavailable is non-zero`,
			}},
	} {
		d := &appsv1.DaemonSet{ObjectMeta: registrytest.ObjMeta("agent"), Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template:       registrytest.Template(map[string]string{"app": "agent"}),
			UpdateStrategy: tc.strategy,
		}}
		if got := registrytest.Messages(registrytest.CreateSteps(DaemonSetRules, d)); !slices.Equal(got, tc.want) {
			t.Errorf("strategy %+v: errors\n%q, want\n%q", tc.strategy, got, tc.want)
		}
	}
}
