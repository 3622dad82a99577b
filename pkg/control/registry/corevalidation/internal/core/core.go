// Package core holds the few of kube-apiserver's internal core types (k8s.io/kubernetes'
// pkg/apis/core) whose Go shape shows in its answers: kube decodes the alpha tolerations
// annotation into its internal Toleration, which has no JSON tags, so a bad annotation's
// error names `[]core.Toleration` and its Go fields (`Toleration.Key`).
package core

import corev1 "k8s.io/api/core/v1"

// TolerationOperator is kube's internal core.TolerationOperator.
type TolerationOperator string

// TaintEffect is kube's internal core.TaintEffect.
type TaintEffect string

// Toleration is kube's internal core.Toleration.
type Toleration struct {
	Key               string
	Operator          TolerationOperator
	Value             string
	Effect            TaintEffect
	TolerationSeconds *int64
}

// V1 is the toleration as the v1 API types it.
func (t Toleration) V1() corev1.Toleration {
	return corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value,
		Effect: corev1.TaintEffect(t.Effect), TolerationSeconds: t.TolerationSeconds}
}
