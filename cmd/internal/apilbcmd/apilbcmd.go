// Package apilbcmd is the `apilb` subcommand that minilab (in a lab) and miniproxy (on a
// host) both wire: the API servers' TCP balancer of pkg/lab/apilb.
package apilbcmd

import (
	"fmt"

	"github.com/minik8s/minik8s/pkg/daemon"
	"github.com/minik8s/minik8s/pkg/lab/apilb"
	"github.com/spf13/cobra"
)

// New returns the subcommand; short says who runs it.
func New(short string) *cobra.Command {
	var o apilb.Options
	cmd := &cobra.Command{
		Use:   "apilb --listen IP:PORT --backend IP:PORT... [--ca-file FILE]",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := o.Balancer()
			if err != nil {
				return err
			}
			ctx, stop := daemon.SignalContext()
			defer stop()
			log := daemon.Logger(false)
			b.Logf = func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }
			b.Ready = daemon.NotifyReady
			log.Info("balancing", "listen", o.Listen, "backends", o.Backends)
			return o.Run(ctx, b)
		},
	}
	o.AddFlags(cmd.Flags())
	_ = cmd.MarkFlagRequired("listen")
	return cmd
}
