// Package hostport admits a pod to the node only if the host ports it asks for are free,
// as the kubelet's predicate admission (the scheduler's NodePorts filter, run again on
// the node: a pod bound by nodeName skips the scheduler).
package hostport

import (
	corev1 "k8s.io/api/core/v1"
)

// Reason and message are the kubelet's for a NodePorts predicate failure.
const (
	Reason  = "NodePorts"
	message = "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
)

// Admission refuses a pod whose host ports another admitted pod of the node holds.
type Admission struct {
	Others func() []*corev1.Pod // the node's admitted pods that may still run
}

func (a Admission) Admit(pod *corev1.Pod) (ok bool, reason, msg string) {
	wanted := ports(pod)
	if len(wanted) == 0 {
		return true, "", ""
	}
	for _, other := range a.Others() {
		if other.UID == pod.UID {
			continue
		}
		for _, held := range ports(other) {
			for _, p := range wanted {
				if p.conflicts(held) {
					return false, Reason, message
				}
			}
		}
	}
	return true, "", ""
}

type hostPort struct {
	ip       string // "0.0.0.0" for every address
	protocol corev1.Protocol
	port     int32
}

// conflicts as the scheduler's HostPortInfo: the same port and protocol on the same
// address, or on every address on either side.
func (p hostPort) conflicts(q hostPort) bool {
	return p.port == q.port && p.protocol == q.protocol && (p.ip == q.ip || p.ip == "0.0.0.0" || q.ip == "0.0.0.0")
}

// ports are the host ports of the pod's containers and sidecars.
func ports(pod *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(c *corev1.Container) {
		for _, cp := range c.Ports {
			if cp.HostPort <= 0 {
				continue
			}
			p := hostPort{ip: cp.HostIP, protocol: cp.Protocol, port: cp.HostPort}
			if p.ip == "" || p.ip == "::" {
				p.ip = "0.0.0.0"
			}
			if p.protocol == "" {
				p.protocol = corev1.ProtocolTCP
			}
			out = append(out, p)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	return out
}
