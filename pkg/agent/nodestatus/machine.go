package nodestatus

import (
	"fmt"
	"sync"

	"github.com/google/cadvisor/lib/fs"
	"github.com/google/cadvisor/lib/machine"
	cadvisorapi "github.com/google/cadvisor/lib/model"
	"github.com/google/cadvisor/lib/utils/sysfs"
)

// Machine is the host's machine info read by cAdvisor's machine package as the kubelet
// reads it (machine.Info on the real sysfs, in the host's namespace); read once, as the
// kubelet does at start, and shared by the node's capacity, its nodeInfo and /spec.
var Machine = sync.OnceValues(func() (*cadvisorapi.MachineInfo, error) {
	fsInfo, err := fs.NewFsInfo(fs.Context{})
	if err != nil {
		return nil, fmt.Errorf("filesystem info: %w", err)
	}
	info, err := machine.Info(sysfs.NewRealSysFs(), fsInfo, true)
	if err != nil {
		return nil, fmt.Errorf("machine info: %w", err)
	}
	return info, nil
})
