package runtime

import (
	"context"
	"fmt"

	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/errdefs"
	"github.com/containerd/typeurl/v2"
)

// LabelOOMKilled marks a container the kernel's OOM killer hit; its exit then reads as
// OOMKilled. Set from containerd's /tasks/oom events by WatchOOM.
const LabelOOMKilled = labelPrefix + "oom-killed"

// WatchOOM records on each container of the runtime's namespace that containerd reports
// OOM-killed, until ctx ends or the event stream fails (the error says why).
func (r *Runtime) WatchOOM(ctx context.Context) error {
	ctx = r.nsContext(ctx)
	envelopes, errs := r.client.Subscribe(ctx, fmt.Sprintf(`topic=="/tasks/oom",namespace==%q`, r.namespace))
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errs:
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("containerd events: %w", err)
		case env := <-envelopes:
			ev, err := typeurl.UnmarshalAny(env.Event)
			if err != nil {
				continue
			}
			oom, ok := ev.(*apievents.TaskOOM)
			if !ok {
				continue
			}
			c, err := r.client.LoadContainer(ctx, oom.ContainerID)
			if errdefs.IsNotFound(err) {
				continue
			}
			if err == nil {
				_, err = c.SetLabels(ctx, map[string]string{LabelOOMKilled: "true"})
			}
			if err != nil && !errdefs.IsNotFound(err) {
				return fmt.Errorf("recording the OOM kill of container %s: %w", oom.ContainerID, err)
			}
		}
	}
}
