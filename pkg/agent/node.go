package agent

import (
	"context"
	"fmt"
	goruntime "runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// registerNode creates this node's Node object, or brings an existing one in
// line with the flags, retrying until it succeeds or ctx ends.
func (a *Agent) registerNode(ctx context.Context) error {
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Cap: 7 * time.Second, Steps: 1 << 30}
	for {
		err := a.ensureNode(ctx)
		if err == nil {
			a.log.Info("node registered", "node", a.cfg.NodeName)
			return nil
		}
		a.log.Error("register node, will retry", "node", a.cfg.NodeName, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("register node %s: %w", a.cfg.NodeName, err)
		case <-time.After(backoff.Step()):
		}
	}
}

func (a *Agent) ensureNode(ctx context.Context) error {
	nodes := a.client.CoreV1().Nodes()
	want := a.desiredNode()
	_, err := nodes.Create(ctx, want, metav1.CreateOptions{})
	if err == nil || !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing, err := nodes.Get(ctx, a.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if existing.Spec.PodCIDR != "" && existing.Spec.PodCIDR != a.cfg.PodCIDR {
		return fmt.Errorf("node %s already has podCIDR %s, but --pod-cidr is %s", a.cfg.NodeName, existing.Spec.PodCIDR, a.cfg.PodCIDR)
	}
	updated := existing.DeepCopy()
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	for k, v := range want.Labels {
		updated.Labels[k] = v
	}
	updated.Spec.PodCIDR, updated.Spec.PodCIDRs = want.Spec.PodCIDR, want.Spec.PodCIDRs
	if apiequality.Semantic.DeepEqual(existing.Labels, updated.Labels) && apiequality.Semantic.DeepEqual(existing.Spec, updated.Spec) {
		return nil
	}
	_, err = nodes.Update(ctx, updated, metav1.UpdateOptions{})
	return err
}

// desiredNode is the Node object as minilet registers it; its status is
// filled by the first heartbeat.
func (a *Agent) desiredNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: a.cfg.NodeName,
			Labels: map[string]string{
				corev1.LabelHostname:   a.cfg.NodeName,
				corev1.LabelOSStable:   goruntime.GOOS,
				corev1.LabelArchStable: goruntime.GOARCH,
			},
		},
		Spec: corev1.NodeSpec{PodCIDR: a.cfg.PodCIDR, PodCIDRs: []string{a.cfg.PodCIDR}},
	}
}
