package runtime

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/containerd/containerd/v2/contrib/seccomp"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/cap"
	"github.com/containerd/containerd/v2/pkg/oci"
)

// ConfigError is a container the runtime refuses for its configuration (the kubelet's
// CreateContainerConfigError), not for a failure of the runtime.
type ConfigError struct{ Reason string }

func (e *ConfigError) Error() string { return e.Reason }

func configError(format string, args ...any) error {
	return &ConfigError{Reason: fmt.Sprintf(format, args...)}
}

// Security is a container's securityContext, pod and container levels merged.
type Security struct {
	RunAsUser, RunAsGroup *int64
	RunAsNonRoot          bool
	SupplementalGroups    []int64
	Privileged            bool
	ReadOnlyRootFS        bool
	AddCaps, DropCaps     []string // without the CAP_ prefix, as Kubernetes writes them; ALL drops every one
	NoNewPrivileges       bool     // allowPrivilegeEscalation: false
	// Seccomp is "" (unconfined), SeccompRuntimeDefault (containerd's default profile) or
	// the path of a profile file (a Localhost profile).
	Seccomp string
}

// SeccompRuntimeDefault asks for the runtime's default seccomp profile.
const SeccompRuntimeDefault = "runtime/default"

// specOpts are the OCI spec options for s, for container name of pod (the kubelet's
// name_namespace(uid)); imageUser is the image's USER, checked against RunAsNonRoot as
// the kubelet does.
func (s Security) specOpts(imageUser, pod, name string) ([]oci.SpecOpts, error) {
	if s.RunAsNonRoot {
		if err := checkNonRoot(s.RunAsUser, imageUser, pod, name); err != nil {
			return nil, err
		}
	}
	opts := []oci.SpecOpts{withUser(s.user(imageUser), s.SupplementalGroups)}
	if s.Privileged {
		opts = append(opts, oci.WithPrivileged, oci.WithAllDevicesAllowed, oci.WithHostDevices)
	} else {
		opts = append(opts, s.capabilityOpts())
	}
	if s.ReadOnlyRootFS {
		opts = append(opts, oci.WithRootFSReadonly())
	}
	// containerd's default spec sets no_new_privs; as its CRI plugin, only
	// allowPrivilegeEscalation: false keeps it, so setuid programs work elsewhere.
	if s.NoNewPrivileges {
		opts = append(opts, oci.WithNoNewPrivileges)
	} else {
		opts = append(opts, oci.WithNewPrivileges)
	}
	// Last: the default profile allows syscalls by the capabilities set above. A
	// privileged container runs unconfined, as with every CRI runtime.
	switch {
	case s.Privileged || s.Seccomp == "":
	case s.Seccomp == SeccompRuntimeDefault:
		opts = append(opts, seccomp.WithDefaultProfile())
	default:
		// Read here, before the container's snapshot is made, with the words of
		// containerd's CRI plugin (which reads it as it generates the spec). Its message
		// starts 'failed to generate container "ID" spec: ' with an ID new at each try;
		// that part is left out, so the pod's status does not change at every retry.
		if _, err := os.ReadFile(s.Seccomp); err != nil {
			return nil, fmt.Errorf("failed to generate spec: cannot load seccomp profile %q: %v", s.Seccomp, err)
		}
		opts = append(opts, seccomp.WithProfile(s.Seccomp))
	}
	return opts, nil
}

// user is the user the container runs as, chosen as the kubelet and containerd's CRI
// plugin choose it: runAsUser, else the image's USER without its group (the kubelet's
// getImageUser passes on CRI's image status, a uid or a name), else root; then
// ":runAsGroup" when set (CRI's GenerateUserString). The group of the image's USER is
// never used: without runAsGroup the group is the user's in the image's /etc/passwd.
func (s Security) user(imageUser string) string {
	u, _, _ := strings.Cut(imageUser, ":")
	if u == "" {
		u = "0"
	}
	if s.RunAsUser != nil {
		u = strconv.FormatInt(*s.RunAsUser, 10)
	}
	if s.RunAsGroup != nil {
		u += ":" + strconv.FormatInt(*s.RunAsGroup, 10)
	}
	return u
}

// checkNonRoot refuses a container that would run as root, with the kubelet's words
// (verifyRunAsNonRoot). The image's USER is read as containerd's CRI plugin reads it: a
// number is a uid, anything else (root too) a name that cannot be verified.
func checkNonRoot(runAsUser *int64, imageUser, pod, container string) error {
	if runAsUser != nil {
		if *runAsUser == 0 {
			return configError("container's runAsUser breaks non-root policy (pod: %q, container: %s)", pod, container)
		}
		return nil
	}
	name, _, _ := strings.Cut(imageUser, ":")
	if name == "" {
		return configError("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", pod, container)
	}
	uid, err := strconv.ParseInt(name, 10, 64)
	if err != nil {
		return configError("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", name, pod, container)
	}
	if uid == 0 {
		return configError("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", pod, container)
	}
	if errs := validation.IsValidUserID(uid); len(errs) > 0 {
		return configError("container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)): %s (pod: %q, container: %s)",
			uid, math.MaxInt32, strings.Join(errs, "; "), pod, container)
	}
	return nil
}

// capabilityOpts are the capabilities of an unprivileged container, applied in the order
// of containerd's CRI plugin (internal/cri/opts WithCapabilities): add ALL (every
// capability minilet holds, as containerd's cap.Current), drop ALL, the named additions,
// then the named drops, so a capability both added and dropped is dropped.
func (s Security) capabilityOpts() oci.SpecOpts {
	var opts []oci.SpecOpts
	if containsFold(s.AddCaps, "ALL") {
		opts = append(opts, func(ctx context.Context, c oci.Client, ctr *containers.Container, spec *oci.Spec) error {
			all, err := allCaps()
			if err != nil {
				return fmt.Errorf("failed to get caps: %w", err)
			}
			return oci.WithCapabilities(all)(ctx, c, ctr, spec)
		})
	}
	if containsFold(s.DropCaps, "ALL") {
		opts = append(opts, oci.WithCapabilities(nil))
	}
	opts = append(opts, oci.WithAddedCapabilities(capNames(s.AddCaps)), oci.WithDroppedCapabilities(capNames(s.DropCaps)))
	return oci.Compose(opts...)
}

// allCaps are the capabilities of minilet's process.
var allCaps = sync.OnceValues(cap.Current)

func capNames(caps []string) []string {
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		c = strings.ToUpper(c)
		if c == "ALL" {
			continue
		}
		if !strings.HasPrefix(c, "CAP_") {
			c = "CAP_" + c
		}
		out = append(out, c)
	}
	return out
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
