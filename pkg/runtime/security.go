package runtime

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/containerd/containerd/v2/contrib/seccomp"
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

// specOpts are the OCI spec options for s; imageUser is the image's USER, checked
// against RunAsNonRoot as the kubelet does.
func (s Security) specOpts(imageUser string) ([]oci.SpecOpts, error) {
	if s.RunAsNonRoot {
		if err := checkNonRoot(s.RunAsUser, imageUser); err != nil {
			return nil, err
		}
	}
	opts := []oci.SpecOpts{withUser(s.user(imageUser), s.SupplementalGroups)}
	if s.Privileged {
		opts = append(opts, oci.WithPrivileged, oci.WithAllDevicesAllowed, oci.WithHostDevices)
	} else {
		if containsFold(s.DropCaps, "ALL") {
			opts = append(opts, oci.WithCapabilities(nil))
		} else if len(s.DropCaps) > 0 {
			opts = append(opts, oci.WithDroppedCapabilities(capNames(s.DropCaps)))
		}
		if len(s.AddCaps) > 0 {
			opts = append(opts, oci.WithAddedCapabilities(capNames(s.AddCaps)))
		}
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
		if _, err := os.Stat(s.Seccomp); err != nil {
			return nil, configError("seccomp profile: %v", err)
		}
		opts = append(opts, seccomp.WithProfile(s.Seccomp))
	}
	return opts, nil
}

// user is the user the container runs as, chosen as containerd's CRI plugin does:
// runAsUser (with runAsGroup), else the image's USER.
func (s Security) user(imageUser string) string {
	if s.RunAsUser == nil {
		return imageUser
	}
	u := strconv.FormatInt(*s.RunAsUser, 10)
	if s.RunAsGroup != nil {
		u += ":" + strconv.FormatInt(*s.RunAsGroup, 10)
	}
	return u
}

// checkNonRoot refuses a container that would run as root, with the kubelet's words.
func checkNonRoot(runAsUser *int64, imageUser string) error {
	if runAsUser != nil {
		if *runAsUser == 0 {
			return configError("container's runAsUser breaks non-root policy")
		}
		return nil
	}
	name, _, _ := strings.Cut(imageUser, ":")
	if name == "" || name == "root" {
		return configError("container has runAsNonRoot and image will run as root")
	}
	uid, err := strconv.ParseInt(name, 10, 64)
	if err != nil {
		return configError("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root", name)
	}
	if uid == 0 {
		return configError("container has runAsNonRoot and image will run as root")
	}
	return nil
}

func capNames(caps []string) []string {
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		c = strings.ToUpper(c)
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
