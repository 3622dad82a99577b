package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	"github.com/minik8s/minik8s/pkg/runtime/pauseimage"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// SandboxConfig describes a pod's pause container.
type SandboxConfig struct {
	PodUID       string
	PodNamespace string
	PodName      string
	// Hostname of the pod (default: PodName).
	Hostname string
	// NetNSPath is the bind-mounted network namespace the pod joins: its own, or the
	// node's for a hostNetwork pod. It is required: a container without a namespace path
	// would inherit the runtime's namespace, which is not the node's when minilet runs in
	// a namespace of its own (a lab node) and containerd does not.
	NetNSPath string
	// HostNetwork marks a pod in the node's network: NetNSPath is the node's namespace,
	// shared with the node and never to be wired or torn down by CNI.
	HostNetwork bool
	// HostUTS puts the pod in the runtime's UTS namespace, with the host's hostname (a
	// hostNetwork pod on a node that is the host); Hostname is then unused.
	HostUTS bool
	// Labels are added to the container's labels (pod labels, for people using ctr).
	Labels     map[string]string
	Linux      Linux
	Namespaces Namespaces
	// Sysctls are set in the sandbox's namespaces (the pod's securityContext.sysctls, as
	// CRI's sandbox sysctls); its containers share them.
	Sysctls map[string]string
}

// sandboxSysctls are the sysctls of cfg's sandbox: the pod's, and, in a network namespace
// of the pod's own, those containerd's CRI plugin adds with its defaults
// (enable_unprivileged_ports, enable_unprivileged_icmp; internal/cri/server/podsandbox
// sandbox_run_linux.go): every user may bind ports below 1024 and send ICMP echo
// requests, unless the pod sets these sysctls itself.
func sandboxSysctls(cfg SandboxConfig) map[string]string {
	sysctls := maps.Clone(cfg.Sysctls)
	if cfg.HostNetwork {
		return sysctls
	}
	if sysctls == nil {
		sysctls = map[string]string{}
	}
	if _, ok := sysctls["net.ipv4.ip_unprivileged_port_start"]; !ok {
		sysctls["net.ipv4.ip_unprivileged_port_start"] = "0"
	}
	if _, ok := sysctls["net.ipv4.ping_group_range"]; !ok {
		sysctls["net.ipv4.ping_group_range"] = "0 2147483647"
	}
	return sysctls
}

// Namespaces are the pod's choices of shared namespaces (hostIPC, hostPID,
// shareProcessNamespace), applied to the sandbox and every container of the pod.
type Namespaces struct {
	HostIPC, HostPID bool
	// SharePID puts the pod's containers in the sandbox's PID namespace, so they see
	// each other's processes and the pause process is PID 1.
	SharePID bool
}

// RunSandbox starts a pod's pause container: it joins the network namespace at NetNSPath
// and gets its own IPC and UTS namespaces with the pod's host name (unless HostUTS).
// The pause image is imported from the copy embedded in minilet when it is missing.
func (r *Runtime) RunSandbox(ctx context.Context, cfg SandboxConfig) (Container, error) {
	if cfg.PodUID == "" {
		return Container{}, errors.New("sandbox: pod UID must not be empty")
	}
	if cfg.NetNSPath == "" {
		return Container{}, fmt.Errorf("sandbox of pod %s: no network namespace path", cfg.PodUID)
	}
	if cfg.Hostname == "" {
		cfg.Hostname = cfg.PodName
	}
	ctx = r.nsContext(ctx)
	// One look-up of the pause image per sandbox (each is several containerd calls); it is
	// imported from the embedded copy only when it is missing.
	img, err := r.image(ctx, pauseimage.Ref)
	if errdefs.IsNotFound(err) {
		if err := r.EnsureImage(ctx, pauseimage.Ref, pauseimage.Open); err != nil {
			return Container{}, fmt.Errorf("sandbox of pod %s: %w", cfg.PodUID, err)
		}
		img, err = r.image(ctx, pauseimage.Ref)
	}
	if err != nil {
		return Container{}, err
	}

	imgSpec, err := img.Spec(ctx)
	if err != nil {
		return Container{}, fmt.Errorf("sandbox of pod %s: reading the config of image %s: %w", cfg.PodUID, img.Name(), err)
	}

	id := newContainerID(cfg.PodUID, sandboxName)
	spec := append([]oci.SpecOpts{withImageProcess(imgSpec.Config), withUser(imgSpec.Config.User, nil), inShimOf(id),
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: cfg.NetNSPath})},
		cfg.Linux.specOpts(id)...)
	if cfg.HostUTS {
		spec = append(spec, oci.WithHostNamespace(specs.UTSNamespace))
	} else {
		spec = append(spec, oci.WithHostname(cfg.Hostname))
	}
	if cfg.Namespaces.HostIPC {
		spec = append(spec, oci.WithHostNamespace(specs.IPCNamespace))
	}
	if sysctls := sandboxSysctls(cfg); len(sysctls) > 0 {
		spec = append(spec, func(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
			if s.Linux == nil {
				s.Linux = &specs.Linux{}
			}
			s.Linux.Sysctl = sysctls
			return nil
		})
	}
	if cfg.Namespaces.HostPID {
		spec = append(spec, oci.WithHostNamespace(specs.PIDNamespace))
	}
	labels := withOwnLabels(cfg.Labels, map[string]string{
		LabelPodUID:        cfg.PodUID,
		LabelPodNamespace:  cfg.PodNamespace,
		LabelPodName:       cfg.PodName,
		LabelContainerName: sandboxName,
		LabelSandbox:       "true",
		LabelNetNS:         cfg.NetNSPath,
		LabelHostNetwork:   strconv.FormatBool(cfg.HostNetwork),
	})

	c, err := r.newContainer(ctx, id, img, spec, labels)
	if err != nil {
		return Container{}, fmt.Errorf("creating sandbox of pod %s: %w", cfg.PodUID, err)
	}
	if err := r.startTask(ctx, c, cio.NullIO); err != nil {
		return Container{}, errors.Join(err, r.RemoveContainer(ctx, id))
	}
	return r.ContainerStatus(ctx, id) // reloaded: c does not see the labels the start set
}

// SetSandboxIP records on a sandbox the address its network set-up gave the pod.
func (r *Runtime) SetSandboxIP(ctx context.Context, id string, ip net.IP) error {
	ctx = r.nsContext(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return fmt.Errorf("loading sandbox %s: %w", id, err)
	}
	if _, err := c.SetLabels(ctx, map[string]string{LabelPodIP: ip.String()}); err != nil {
		return fmt.Errorf("recording the address of sandbox %s: %w", id, err)
	}
	return nil
}

// shimGroup is the OCI annotation by which containerd's runc shim serves several
// containers from one shim process.
const shimGroup = "io.containerd.runc.v2.group"

// inShimOf has a container served by the shim of the pod whose sandbox is sandboxID, as
// containerd's CRI plugin does: one shim per pod instead of one per container (each is a
// process of ~10 MiB, and starting it is a good part of starting a container).
func inShimOf(sandboxID string) oci.SpecOpts {
	return oci.WithAnnotations(map[string]string{shimGroup: sandboxID})
}

// withOwnLabels is a container's labels: the caller's, with ours (which identify the pod and
// the container to us) over any of the same name.
func withOwnLabels(theirs, ours map[string]string) map[string]string {
	labels := make(map[string]string, len(theirs)+len(ours))
	maps.Copy(labels, theirs)
	maps.Copy(labels, ours)
	return labels
}
