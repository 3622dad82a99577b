package core

import (
	"slices"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/apps"
	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const labelNameMsg = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"

// TestPodSchedulingConstraintsValidation: a pod's affinity and topology spread
// constraints are refused as kube's validateAffinity and validateTopologySpreadConstraints
// refuse them (pkg/apis/core/validation/validation.go, v1.36).
func TestPodSchedulingConstraintsValidation(t *testing.T) {
	app := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	cases := []struct {
		name string
		edit func(*corev1.PodSpec)
		want []string
	}{
		{"required node affinity without terms", func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
		}, []string{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term"}},
		{"node selector requirements", func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{
						{Key: "zone", Operator: corev1.NodeSelectorOpIn},
						{Key: "zone", Operator: corev1.NodeSelectorOpExists, Values: []string{"a"}},
						{Key: "cpus", Operator: corev1.NodeSelectorOpGt, Values: []string{"1", "2"}},
						{Key: "a b", Operator: "Equals", Values: []string{"x y"}},
					},
					MatchFields: []corev1.NodeSelectorRequirement{
						{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1", "n2"}},
						{Key: "spec.unschedulable", Operator: corev1.NodeSelectorOpExists},
						{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"Node_1"}},
					}}}}}}
		}, []string{
			"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
			"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
			"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[2].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
			`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[3].operator: Invalid value: "Equals": not a valid selector operator`,
			`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[3].key: Invalid value: "a b": ` + labelNameMsg,
			`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[3].values[0]: Invalid value: "x y": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
			"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values: Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
			`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[1].operator: Invalid value: "Exists": not a valid selector operator`,
			`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[1].key: Invalid value: "spec.unschedulable": not a valid field selector key`,
			`spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[2].values[0]: Invalid value: "Node_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		}},
		{"preferred node affinity: weight, any label value", func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 101,
					Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
						{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"x y"}}}}}}}}
		}, []string{"spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101: must be in the range 1-100"}},
		{"pod affinity terms", func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{
				PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
					{LabelSelector: app, Namespaces: []string{"Team"}},
					{MatchLabelKeys: []string{"app"}, TopologyKey: "zone"},
				}},
				PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
					{Weight: 0, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: app, TopologyKey: "a b",
						NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Is"}}},
						MatchLabelKeys:    []string{"version"}, MismatchLabelKeys: []string{"version"}}},
				}},
			}
		}, []string{
			`spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespace: Invalid value: "Team": ` + dnsLabelMsg,
			"spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty",
			`spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: "": name part must be non-empty`,
			`spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Invalid value: "": ` + labelNameMsg,
			"spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set",
			"spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
			`spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.namespaceSelector.matchExpressions[0].operator: Invalid value: "Is": not a valid selector operator`,
			`spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.matchLabelKeys[0]: Invalid value: "version": exists in both matchLabelKeys and mismatchLabelKeys`,
			`spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey: Invalid value: "a b": ` + labelNameMsg,
		}},
		{"topology spread constraints", func(s *corev1.PodSpec) {
			minDomains, honor, never := int32(2), corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicy("Never")
			s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{
				{MaxSkew: 0, TopologyKey: "zone", WhenUnsatisfiable: "Sometimes", LabelSelector: app},
				{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway, MinDomains: &minDomains,
					NodeAffinityPolicy: &honor, NodeTaintsPolicy: &never, MatchLabelKeys: []string{"pod-template-hash"}},
				{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: app},
				{MaxSkew: 1, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a b": "c"}}},
			}
		}, []string{
			"spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
			`spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Sometimes": supported values: "DoNotSchedule", "ScheduleAnyway"`,
			`spec.topologySpreadConstraints[1].{topologyKey, whenUnsatisfiable}: Duplicate value: "{zone, ScheduleAnyway}"`,
			"spec.topologySpreadConstraints[1].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
			`spec.topologySpreadConstraints[1].nodeTaintsPolicy: Unsupported value: "Never": supported values: "Honor", "Ignore"`,
			"spec.topologySpreadConstraints[1].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set",
			"spec.topologySpreadConstraints[3].topologyKey: Required value: can not be empty",
			`spec.topologySpreadConstraints[3].labelSelector.matchLabels: Invalid value: "a b": ` + labelNameMsg,
		}},
	}
	for _, c := range cases {
		if got := podCreateErrors(metav1.ObjectMeta{Name: "p", Namespace: "default"}, c.edit); !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestPodSchedulingConstraintsAcceptsValid: the constraints users and controllers write
// (a DaemonSet's pod's node name field, a Deployment's spread by pod-template-hash) pass.
func TestPodSchedulingConstraintsAcceptsValid(t *testing.T) {
	app := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	minDomains := int32(2)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		Affinity: &corev1.Affinity{
			NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
					{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}}},
					{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/os", Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
						{Key: "cpus", Operator: corev1.NodeSelectorOpGt, Values: []string{"2"}}}},
				}},
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100,
					Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpExists}}}}},
			},
			PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				{LabelSelector: app, TopologyKey: "kubernetes.io/hostname", MatchLabelKeys: []string{"pod-template-hash"}, Namespaces: []string{"default"}}}},
		},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule, MinDomains: &minDomains,
				LabelSelector: app, MatchLabelKeys: []string{"pod-template-hash"}},
			{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: app},
		},
	}}
	if errs := registrytest.CreateSteps(PodRules, pod); len(errs) != 0 {
		t.Errorf("a valid pod refused: %v", errs.ToAggregate())
	}
	d := registrytest.Deployment(map[string]string{"app": "web"})
	d.Spec.Template.Spec.Affinity = pod.Spec.Affinity
	d.Spec.Template.Spec.TopologySpreadConstraints = pod.Spec.TopologySpreadConstraints
	if errs := registrytest.CreateSteps(apps.DeploymentRules, d); len(errs) != 0 {
		t.Errorf("a valid deployment refused: %v", errs.ToAggregate())
	}
}
