package podsync

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/cm"
	"github.com/minik8s/minik8s/pkg/agent/dns"
	"github.com/minik8s/minik8s/pkg/agent/sysctl"
	"github.com/minik8s/minik8s/pkg/network"
	"github.com/minik8s/minik8s/pkg/network/cniconf"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// ensureSandbox returns the pod's running sandbox, making a new one (with a
// new netns and network) when there is none, as the kubelet does: a pod
// whose sandbox died, or whose address is unknown, is killed and started
// again. A nil sandbox without error means the pod must not start again
// (restartPolicy Never, or every container succeeded for good); its containers were stopped.
func (s *Syncer) ensureSandbox(ctx context.Context, st *PodState, pod *corev1.Pod, all []runtime.Container) (*runtime.Container, error) {
	sandboxes := sandboxesOf(all)
	if len(sandboxes) > 0 && isRunning(sandboxes[0]) && st.podIP == nil {
		// Adopted after a restart without an address in the pod's status (a static
		// pod's has none): the sandbox knows it, as CRI's sandbox status does.
		st.podIP = sandboxIP(sandboxes[0], s.cfg.NodeIP)
	}
	if len(sandboxes) > 0 && isRunning(sandboxes[0]) && st.podIP != nil {
		err := s.checkNetwork(ctx, st, pod, sandboxes[0])
		if err == nil {
			return &sandboxes[0], nil
		}
		s.log.Warn("pod network is broken; starting the pod over", "pod", PodKey(pod), "err", err)
	}
	apps := appContainersOf(all)
	grace := gracePeriod(pod)
	done := succeededForGood(pod, all)
	if len(sandboxes) > 0 && len(apps) > 0 && (pod.Spec.RestartPolicy == corev1.RestartPolicyNever || len(done) == len(pod.Spec.Containers)) {
		s.log.Info("sandbox of pod is gone and none of its containers runs again; stopping them", "pod", PodKey(pod))
		return nil, s.stopContainers(ctx, pod, apps, grace)
	}
	if len(sandboxes) > 0 {
		// Whatever changed (the sandbox stopped, has no address, or its network broke), in
		// the kubelet's words (SyncPod); the log says what.
		s.podEvent(pod, corev1.EventTypeNormal, eventSandboxChanged, "Pod sandbox changed, it will be killed and re-created.")
	}
	if len(all) > 0 {
		s.log.Info("sandbox of pod is gone or has no address; starting the pod over", "pod", PodKey(pod))
		if err := s.stopContainers(ctx, pod, apps, grace); err != nil {
			return nil, err
		}
		// The new containers restart the old ones, whose last runs (as stopped now) are
		// their lastState, as the kubelet reports it across a new sandbox.
		stopped, err := s.rt.ListContainers(ctx, string(pod.UID))
		if err != nil {
			return nil, fmt.Errorf("list containers of pod %s: %w", PodKey(pod), err)
		}
		for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
			if history := containersNamed(stopped, c.Name); len(history) > 0 && !done[c.Name] {
				st.restartCounts[c.Name]++
				st.removed[c.Name] = removedRun{lastState: terminatedState(&c, history[0], st.terminationLogs)}
			}
		}
		// Stopped ephemeral containers and those done for good stay: they do not run again in
		// the new sandbox.
		again := slices.DeleteFunc(withoutEphemeral(pod, apps), func(c runtime.Container) bool { return done[c.Name] })
		if err := s.removeContainers(ctx, again); err != nil {
			return nil, err
		}
	}
	if err := s.releaseSandbox(ctx, podRef(pod), sandboxes); err != nil {
		return nil, err
	}
	sb, err := s.createSandbox(ctx, st, pod)
	if err != nil {
		s.podEvent(pod, corev1.EventTypeWarning, eventFailedSandbox, "Failed to create pod sandbox: %v", err)
		return nil, fmt.Errorf("create sandbox of pod %s: %w", PodKey(pod), err)
	}
	return sb, nil
}

// succeededForGood names the pod's containers a new sandbox does not start again, as the
// kubelet's computePodActions: those whose last run succeeded under restartPolicy OnFailure,
// the container's own or else the pod's.
func succeededForGood(pod *corev1.Pod, all []runtime.Container) map[string]bool {
	done := map[string]bool{}
	for _, c := range pod.Spec.Containers {
		runOnce := pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure
		if c.RestartPolicy != nil {
			runOnce = *c.RestartPolicy == corev1.ContainerRestartPolicyOnFailure
		}
		history := containersNamed(all, c.Name)
		if runOnce && len(history) > 0 && history[0].State == runtime.StateExited && history[0].ExitCode == 0 {
			done[c.Name] = true
		}
	}
	return done
}

// errNoUserNamespaces is the kubelet's refusal (its user namespace manager's) of a pod asking
// for a user namespace on a runtime handler without them: minilet's only handler has none,
// as the node's status.runtimeHandlers says.
var errNoUserNamespaces = errors.New("can't set `spec.hostUsers: false`, runtime does not support user namespaces")

// createSandbox makes the pod's netns, its pause container holding it, and
// wires the network through CNI. What it made is undone when a later step
// fails. A hostNetwork pod gets neither netns nor CNI: it joins the node's
// network namespace and shares its address.
func (s *Syncer) createSandbox(ctx context.Context, st *PodState, pod *corev1.Pod) (*runtime.Container, error) {
	if pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers {
		return nil, errNoUserNamespaces
	}
	hostname, err := s.sandboxHostname(pod)
	if err != nil {
		return nil, err
	}
	cfg := runtime.SandboxConfig{
		PodUID:       string(pod.UID),
		PodNamespace: pod.Namespace,
		PodName:      pod.Name,
		Hostname:     hostname,
		Labels:       podLabels(pod),
		Namespaces:   namespacesOf(pod),
		Sysctls:      sysctl.Sandbox(pod),
		Linux:        runtime.Linux{CgroupParent: cm.PodCgroup(s.cfg.CgroupRoot, pod), OOMScoreAdj: ptr.To(max(cm.SandboxOOMScoreAdj, s.cfg.OOMFloor))},
	}
	if err := cm.EnsurePodCgroup(s.cfg.CgroupRoot, pod, s.cfg.PodMaxPids); err != nil {
		return nil, fmt.Errorf("pod cgroup: %w", err)
	}
	st.actuatedPodResources, st.podResourcesActuated = pod.Spec.Resources.DeepCopy(), true
	// A new sandbox has a new address: its containers get fresh DNS files.
	if err := dns.RemovePodFiles(s.podDir(pod)); err != nil {
		return nil, err
	}
	if pod.Spec.HostNetwork {
		if err := s.hostNet.Join(&cfg); err != nil {
			return nil, err
		}
		sb, err := s.rt.RunSandbox(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("run pause container: %w", err)
		}
		st.podIP = net.ParseIP(s.cfg.NodeIP)
		return &sb, nil
	}
	nsPath, err := s.net.NewNetNS(s.cfg.NetNSDir, string(pod.UID))
	if err != nil {
		return nil, fmt.Errorf("create network namespace: %w", err)
	}
	cfg.NetNSPath = nsPath
	st.trace.Mark("netns", s.clock.Now())
	sb, err := s.rt.RunSandbox(ctx, cfg)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("run pause container: %w", err), s.removeNetNS(nsPath))
	}
	st.trace.Mark("sandbox", s.clock.Now())
	bandwidth, err := cniconf.PodBandwidth(pod.Annotations)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("pod network: %w", err), s.releaseSandbox(context.WithoutCancel(ctx), podRef(pod), []runtime.Container{sb}))
	}
	ip, err := s.net.SetUp(ctx, sb.ID, nsPath, podRef(pod), network.PodOptions{Ports: hostPorts(pod), Bandwidth: bandwidth})
	if err != nil {
		undo := s.releaseSandbox(context.WithoutCancel(ctx), podRef(pod), []runtime.Container{sb})
		return nil, errors.Join(fmt.Errorf("set up pod network: %w", err), undo)
	}
	if err := s.rt.SetSandboxIP(ctx, sb.ID, ip); err != nil {
		return nil, errors.Join(err, s.releaseSandbox(context.WithoutCancel(ctx), podRef(pod), []runtime.Container{sb}))
	}
	st.podIP = ip
	st.netChecked = s.clock.Now()
	st.trace.Mark("network", st.netChecked)
	return &sb, nil
}

// sandboxIP is the pod address a running sandbox holds: the node's for a hostNetwork
// pod, else the one recorded at its network set-up (nil when none was).
func sandboxIP(sb runtime.Container, nodeIP string) net.IP {
	if sb.HostNetwork {
		return net.ParseIP(nodeIP)
	}
	return net.ParseIP(sb.PodIP)
}

// netCheckPeriod is how often a running pod's network is checked (CNI CHECK runs every
// plugin of the network once: a few processes per pod).
const netCheckPeriod = time.Minute

// checkNetwork runs CNI CHECK on a running sandbox when its last check is older than
// netCheckPeriod; an error means the pod's network is no longer what ADD made.
func (s *Syncer) checkNetwork(ctx context.Context, st *PodState, pod *corev1.Pod, sb runtime.Container) error {
	if pod.Spec.HostNetwork {
		return s.hostNet.Check(sb)
	}
	if !s.hostNet.HasPodNetwork(sb) || s.clock.Since(st.netChecked) < netCheckPeriod {
		return nil // no pod network of its own, or checked lately
	}
	if err := s.net.Check(ctx, sb.ID, s.netnsPath(string(pod.UID)), podRef(pod)); err != nil {
		return err
	}
	st.netChecked = s.clock.Now()
	return nil
}

// hostPorts are the pod's containers' hostPorts, for the portmap plugin.
func hostPorts(pod *corev1.Pod) []network.PortMapping {
	var ports []network.PortMapping
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				ports = append(ports, network.PortMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: string(p.Protocol), HostIP: p.HostIP})
			}
		}
	}
	return ports
}

// podDir is the pod's directory (its volumes, DNS files and container records).
func (s *Syncer) podDir(pod *corev1.Pod) string { return filepath.Join(s.cfg.PodsDir, string(pod.UID)) }

// podHostname is spec.hostnameOverride, else spec.hostname, else the pod's name, cut to a
// DNS label as the kubelet's GeneratePodHostNameAndDomain does.
func podHostname(pod *corev1.Pod) string {
	name := pod.Spec.Hostname
	if name == "" {
		name = pod.Name
	}
	if o := pod.Spec.HostnameOverride; o != nil {
		name = *o
	}
	return truncateHostname(name)
}

// sandboxHostname is the hostname of the pod's sandbox: the node's for a hostNetwork pod,
// else the pod's, or its fully qualified name with setHostnameAsFQDN.
func (s *Syncer) sandboxHostname(pod *corev1.Pod) (string, error) {
	if pod.Spec.HostNetwork {
		return truncateHostname(s.cfg.NodeName), nil
	}
	return s.cfg.DNS.KernelHostname(pod, podHostname(pod))
}

// truncateHostname cuts a hostname to a DNS label's 63 characters, without a trailing
// '-' or '.', as the kubelet's truncatePodHostnameIfNeeded.
func truncateHostname(name string) string {
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-.")
	}
	return name
}

// podLabels are the kubelet's labels on every container of a pod, so tools
// looking at containerd can tell which pod a container belongs to.
func podLabels(pod *corev1.Pod) map[string]string {
	return map[string]string{
		"io.kubernetes.pod.name":      pod.Name,
		"io.kubernetes.pod.namespace": pod.Namespace,
		"io.kubernetes.pod.uid":       string(pod.UID),
	}
}
