// Command minilab runs a multi-node minik8s cluster on one host, one network namespace per
// node, for labs without VMs and for end-to-end tests.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/minik8s/minik8s/cmd/internal/apilbcmd"
	"github.com/minik8s/minik8s/pkg/daemon"
	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
	"github.com/minik8s/minik8s/pkg/lab/echo"
	"github.com/minik8s/minik8s/pkg/lab/forward"
	"github.com/minik8s/minik8s/pkg/lab/upstreamdns"
	"github.com/spf13/cobra"
)

func main() {
	err := newCommand().Execute()
	// A command run attached (kubectl, exec) returns its own exit status, which is passed
	// through; a failure that wraps one (a kubectl call inside up) is said, not swallowed.
	exit, attached := err.(*exec.ExitError)
	switch {
	case attached:
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "minilab:", err)
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	var name string
	root := &cobra.Command{
		Use:           "minilab",
		Short:         "A multi-node minik8s cluster on one host, one network namespace per node",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return lab.ValidateName(name)
		},
	}
	root.PersistentFlags().StringVar(&name, "name", "lab", "lab name")
	root.AddCommand(upCommand(&name), downCommand(&name), infoCommand(&name), kubectlCommand(&name), execCommand(&name), restartCommand(&name), netCommand(&name), explainCommand(&name), upstreamDNSCommand(),
		kubeconfigCommand(&name), publishCommand(&name), forwardCommand(), apilbCommand(), imageCommand(&name),
		stopCommand(&name), startCommand(&name), partitionCommand(&name), netemCommand(&name), linkCommand(&name), healCommand(&name), uplinkEchoCommand())
	root.SetErr(os.Stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%w\nsee %s --help", err, cmd.CommandPath())
	})
	return root
}

// loadLab reads an existing lab, saying plainly when there is none.
func loadLab(name string) (*lab.Lab, error) {
	l, err := lab.Load(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("lab %q does not exist; start one with: minilab up --name %s", name, name)
	}
	return l, err
}

func upCommand(name *string) *cobra.Command {
	var o cluster.Options
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Create the lab and start a cluster on it; waits until every node is Ready",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			o.Name, o.Progress = *name, cmd.OutOrStdout()
			ctx, stop := daemon.SignalContext()
			defer stop()
			l, err := cluster.Up(ctx, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "lab %q is up: kubectl --kubeconfig %s get nodes\n", l.Name, l.HostKubeconfig)
			return nil
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func netCommand(name *string) *cobra.Command {
	var output string
	cmd := labCommand(name, "net node-i", "Show a node's pod network (minilet network in its namespace): bridge, veth pairs, routes, VXLAN entries",
		cobra.ExactArgs(1), func(cmd *cobra.Command, l *lab.Lab, args []string) error {
			return runBinaryInNode(l, args[0], "minilet", func(n lab.Node) []string {
				return []string{"network", "--root-dir", n.RunDir, "-o", output}
			})
		})
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}

func restartCommand(name *string) *cobra.Command {
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "restart node-i|containerd|miniapi|PROCESS",
		Short: "Stop a daemon of the lab and start it again with the same arguments (a node name restarts its minilet)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := lab.Load(*name)
			if err != nil {
				return err
			}
			process := processName(l, args[0])
			pid, err := l.Restart(process, grace)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s restarted as PID %d\n", process, pid)
			return nil
		},
	}
	cmd.Flags().DurationVar(&grace, "grace", 0, "time between SIGTERM and SIGKILL (0: killed at once, as in a crash)")
	return cmd
}

func downCommand(name *string) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the cluster and remove every namespace, link, mount, container and file of the lab",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cluster.Down(context.Background(), *name); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "lab %q removed\n", *name)
			return nil
		},
	}
}

// info is what `minilab info -o json` prints.
type info struct {
	Name       string `json:"name"`
	Kubeconfig string `json:"kubeconfig"`
	APIServer  string `json:"apiServer"`
	// HostKubeconfig reaches APIServer through its host loopback port (in Published).
	HostKubeconfig string            `json:"hostKubeconfig,omitempty"`
	Published      []lab.Publication `json:"published,omitempty"`
	Faults         []faultInfo       `json:"faults"`
	Uplink         *lab.Uplink       `json:"uplink,omitempty"`
	NetNS          string            `json:"controlPlaneNetns"`
	PodNetwork     string            `json:"podNetwork"`
	Segments       int               `json:"segments"`
	// ControlPlanes are the members of a highly available lab (minilab up --control-planes),
	// behind the balancer at APIServer.
	ControlPlanes []memberInfo `json:"controlPlanes,omitempty"`
	Nodes         []nodeInfo   `json:"nodes"`
}

type memberInfo struct {
	Name      string `json:"name"`
	IP        string `json:"ip"`
	NetNS     string `json:"netns"`
	Etcd      string `json:"etcd"`      // client URL
	APIServer string `json:"apiServer"` // the member's own miniapi
}

type faultInfo struct {
	Kind   string `json:"kind"`
	Target string `json:"target"`
	Detail string `json:"detail,omitempty"`
}

type nodeInfo struct {
	Name        string `json:"name"`
	IP          string `json:"ip"`
	NetNS       string `json:"netns"`
	PodCIDR     string `json:"podCIDR"`
	ManifestDir string `json:"podManifestPath"`
}

func infoCommand(name *string) *cobra.Command {
	var output string
	cmd := labCommand(name, "info", "Show the lab: kubeconfig and, per node, name, IP, network namespace and pod manifest directory",
		cobra.NoArgs, func(cmd *cobra.Command, l *lab.Lab, _ []string) error {
			in := info{Name: l.Name, Kubeconfig: l.Kubeconfig, APIServer: fmt.Sprintf("https://%s:%d", l.ControlPlane.IP, cluster.APIPort), NetNS: l.ControlPlane.NetNS,
				PodNetwork: l.PodNetwork, Segments: len(l.Switches), HostKubeconfig: l.HostKubeconfig, Published: l.Published, Uplink: l.Uplink}
			in.Faults = []faultInfo{}
			for _, f := range l.Faults {
				in.Faults = append(in.Faults, faultInfo{Kind: f.Kind, Target: f.Target, Detail: f.Detail})
			}
			for _, m := range l.ControlPlanes {
				in.ControlPlanes = append(in.ControlPlanes, memberInfo{Name: m.Name, IP: m.IP, NetNS: m.NetNS,
					Etcd: fmt.Sprintf("https://%s:%d", m.IP, cluster.EtcdClientPort), APIServer: fmt.Sprintf("https://%s:%d", m.IP, cluster.APIPort)})
			}
			for _, n := range l.Nodes {
				in.Nodes = append(in.Nodes, nodeInfo{Name: n.Name, IP: n.IP, NetNS: n.NetNS, PodCIDR: n.PodCIDR, ManifestDir: n.ManifestDir})
			}
			out := cmd.OutOrStdout()
			switch output {
			case "json":
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(in)
			case "":
				fmt.Fprintf(out, "lab %s: API %s (netns %s), kubeconfig %s, pod network %s on %d segment(s)\n", in.Name, in.APIServer, in.NetNS, in.Kubeconfig, in.PodNetwork, in.Segments)
				if in.HostKubeconfig != "" {
					fmt.Fprintf(out, "  from the host: kubectl --kubeconfig %s\n", in.HostKubeconfig)
				}
				for _, p := range in.Published {
					fmt.Fprintf(out, "  published %-21s -> %s (from %s)\n", p.Listen, p.Target, p.NetNS)
				}
				if in.Uplink != nil {
					fmt.Fprintf(out, "  uplink: internet host %s (netns %s) behind router %s (netns %s)\n", in.Uplink.IP, in.Uplink.NetNS, in.Uplink.RouterIP, in.Uplink.RouterNetNS)
				}
				for _, f := range in.Faults {
					fmt.Fprintf(out, "  fault: %s %s %s (minilab heal undoes it)\n", f.Kind, f.Target, f.Detail)
				}
				for _, m := range in.ControlPlanes {
					fmt.Fprintf(out, "  %-8s %-12s netns %-20s etcd %s (process etcd-%s), miniapi %s (process miniapi-%s)\n", m.Name, m.IP, m.NetNS, m.Etcd, m.Name, m.APIServer, m.Name)
				}
				for _, n := range in.Nodes {
					fmt.Fprintf(out, "  %-8s %-12s netns %-20s pods %-14s manifests %s\n", n.Name, n.IP, n.NetNS, n.PodCIDR, n.ManifestDir)
				}
				return nil
			default:
				return fmt.Errorf("-o %q: only json is supported", output)
			}
		})
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json")
	return cmd
}

func kubectlCommand(name *string) *cobra.Command {
	return labCommand(name, "kubectl -- ARGS...", "Run kubectl against the lab, from inside the lab",
		nil, func(cmd *cobra.Command, l *lab.Lab, args []string) error {
			return runAttached(cluster.KubectlCommand(context.Background(), l, args...))
		})
}

func execCommand(name *string) *cobra.Command {
	return labCommand(name, "exec NODE -- COMMAND...", "Run a command in a node's network namespace (NODE may also be cp, a control-plane member cp-N, client, or uplink: the internet host of --uplink)",
		cobra.MinimumNArgs(2), func(cmd *cobra.Command, l *lab.Lab, args []string) error {
			netns := ""
			switch {
			case args[0] == "cp":
				netns = l.ControlPlane.NetNS
			case args[0] == "client" && l.Client != nil:
				netns = l.Client.NetNS
			case args[0] == "uplink" && l.Uplink != nil:
				netns = l.Uplink.NetNS
			}
			for _, m := range l.ControlPlanes {
				if m.Name == args[0] {
					netns = m.NetNS
				}
			}
			for _, n := range l.Nodes {
				if n.Name == args[0] {
					netns = n.NetNS
				}
			}
			if netns == "" {
				return fmt.Errorf("lab %q has no node %q", *name, args[0])
			}
			return runAttached(lab.Command(context.Background(), netns, args[1], args[2:]...))
		})
}

func explainCommand(name *string) *cobra.Command {
	var service, from, to, protocol, output string
	var port int32
	cmd := labCommand(name, "explain NODE (--service NAMESPACE/NAME | --from POD|IP --to POD|SERVICE|IP) [--port PORT] [--protocol TCP|UDP|SCTP] [-o json]", "Run miniproxy explain in a node's network namespace: the path a packet to a Service takes there, and the network policy verdict (admin tiers included)",
		cobra.ExactArgs(1), func(cmd *cobra.Command, l *lab.Lab, args []string) error {
			return runBinaryInNode(l, args[0], "miniproxy", func(n lab.Node) []string {
				return []string{"explain", "--kubeconfig", filepath.Join(l.StateDir, n.Name+".kubeconfig"), "--service", service,
					"--from", from, "--to", to, "--port", fmt.Sprint(port), "--protocol", protocol, "--output", output}
			})
		})
	f := cmd.Flags()
	f.StringVar(&service, "service", "", "the Service, NAMESPACE/NAME")
	f.StringVar(&from, "from", "", "source of the packet: an address or a pod, NAMESPACE/NAME (default: any)")
	f.StringVar(&to, "to", "", "destination pod or Service, NAMESPACE/NAME (instead of --service), or an address")
	f.Int32Var(&port, "port", 0, "a service port or node port, or the destination pod's port (default: every service port)")
	f.StringVar(&protocol, "protocol", "", "TCP, UDP or SCTP (default: every service port's; TCP to a pod)")
	f.StringVarP(&output, "output", "o", "", "output format: json")
	return cmd
}

// runBinaryInNode runs binary, from minilab's own directory, in the network namespace of
// the lab's node of that name, with the arguments args gives for that node.
func runBinaryInNode(l *lab.Lab, node, binary string, args func(lab.Node) []string) error {
	n, err := l.Node(node)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return runAttached(lab.Command(context.Background(), n.NetNS, filepath.Join(filepath.Dir(exe), binary), args(n)...))
}

func runAttached(cmd *exec.Cmd) error {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	return cmd.Run()
}

func upstreamDNSCommand() *cobra.Command {
	var listen, hosts string
	cmd := &cobra.Command{
		Use:   "upstream-dns --listen ADDR --hosts FILE",
		Short: "Serve a lab's DNS outside the cluster: the names of a hosts file, NXDOMAIN for the rest (minilab up runs it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := os.Open(hosts)
			if err != nil {
				return fmt.Errorf("--hosts: %w", err)
			}
			recs, err := upstreamdns.ParseHosts(f)
			f.Close()
			if err != nil {
				return fmt.Errorf("--hosts %s: %w", hosts, err)
			}
			pc, ln, err := upstreamdns.Listen(listen)
			if err != nil {
				return err
			}
			ctx, stop := daemon.SignalContext()
			defer stop()
			log := daemon.Logger(false)
			log.Info("serving DNS", "addr", listen, "names", len(recs))
			return upstreamdns.Serve(ctx, pc, ln, recs, log)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", net.JoinHostPort(lab.UpstreamDNS, "53"), "address to answer on (UDP and TCP)")
	cmd.Flags().StringVar(&hosts, "hosts", "", "hosts file of the names to serve")
	_ = cmd.MarkFlagRequired("hosts")
	return cmd
}

func kubeconfigCommand(name *string) *cobra.Command {
	return labCommand(name, "kubeconfig", "Print the path of the lab's host kubeconfig: plain kubectl on the host reaches the lab's API through its loopback port",
		cobra.NoArgs, func(cmd *cobra.Command, l *lab.Lab, _ []string) error {
			if l.HostKubeconfig == "" {
				return fmt.Errorf("lab %q has no host kubeconfig (made by an older minilab); use minilab kubectl", l.Name)
			}
			fmt.Fprintln(cmd.OutOrStdout(), l.HostKubeconfig)
			return nil
		})
}

func publishCommand(name *string) *cobra.Command {
	return labCommand(name, "publish [127.0.0.1:]HOSTPORT:NODE:PORT", "Forward a host loopback port to a node's port (or a lab address's) on the running lab, as minilab up --publish",
		cobra.ExactArgs(1), func(cmd *cobra.Command, l *lab.Lab, args []string) error {
			p, err := cluster.ParsePublish(l, args[0])
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := cluster.Publish(ctx, l, filepath.Dir(exe), p); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s -> %s\n", p.Listen, p.Target)
			return nil
		})
}

func forwardCommand() *cobra.Command {
	var listen, netns, to string
	cmd := &cobra.Command{
		Use:   "forward --listen 127.0.0.1:PORT --netns NETNS --to IP:PORT",
		Short: "Forward connections on a host loopback address to an address dialed from inside a lab namespace (minilab up and publish run it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := forward.CheckLoopback(listen); err != nil {
				return fmt.Errorf("--listen: %w", err)
			}
			if _, _, err := net.SplitHostPort(to); err != nil {
				return fmt.Errorf("--to %q: %w", to, err)
			}
			nsPath := lab.NetNSPath(netns)
			if _, err := os.Stat(nsPath); err != nil {
				return fmt.Errorf("--netns: %w", err)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			ctx, stop := daemon.SignalContext()
			defer stop()
			log := daemon.Logger(false)
			log.Info("forwarding", "listen", listen, "netns", netns, "to", to)
			return forward.Serve(ctx, ln, nsPath, to, func(format string, args ...any) { log.Warn(fmt.Sprintf(format, args...)) })
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "host loopback address to listen on")
	cmd.Flags().StringVar(&netns, "netns", "", "lab namespace (a name in /run/netns) to dial from")
	cmd.Flags().StringVar(&to, "to", "", "address to dial")
	for _, f := range []string{"listen", "netns", "to"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}

func apilbCommand() *cobra.Command {
	cmd := apilbcmd.New("Balance TCP connections over API servers, leaving out those whose /readyz fails (minilab up --control-planes runs it)")
	cmd.Hidden = true
	return cmd
}

func imageCommand(name *string) *cobra.Command {
	cmd := &cobra.Command{Use: "image", Short: "Bring your own images to the lab's nodes (there is no registry to pull from)"}
	load := labCommand(name, "load FILE.tar|DIR", "Import an OCI image-layout or docker-archive tarball (or an OCI layout directory) into every node, as kind load image-archive",
		cobra.ExactArgs(1), func(cmd *cobra.Command, l *lab.Lab, args []string) error {
			names, err := cluster.LoadImage(cmd.Context(), l, args[0])
			if err != nil {
				return err
			}
			for _, n := range names {
				fmt.Fprintf(cmd.OutOrStdout(), "loaded %s on %d node(s)\n", n, len(l.Nodes))
			}
			return nil
		})
	ls := labCommand(name, "ls", "List the images of every node",
		cobra.NoArgs, func(cmd *cobra.Command, l *lab.Lab, _ []string) error {
			imgs, err := cluster.ListImages(cmd.Context(), l)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%-8s %-50s %s\n", "NODE", "IMAGE", "SIZE")
			for _, n := range l.Nodes {
				for _, img := range imgs[n.Name] {
					fmt.Fprintf(out, "%-8s %-50s %.1fMB\n", n.Name, img.Name, float64(img.Size)/1e6)
				}
			}
			return nil
		})
	cmd.AddCommand(load, ls)
	return cmd
}

// processName is the lab process a command names: a node name means its minilet.
func processName(l *lab.Lab, arg string) string {
	if n, err := l.Node(arg); err == nil {
		return "minilet-" + n.Name
	}
	return arg
}

// labCommand is a command on an existing lab: it loads the lab and hands it over.
func labCommand(name *string, use, short string, args cobra.PositionalArgs, run func(cmd *cobra.Command, l *lab.Lab, args []string) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: args, RunE: func(cmd *cobra.Command, args []string) error {
		l, err := loadLab(*name)
		if err != nil {
			return err
		}
		return run(cmd, l, args)
	}}
}

func stopCommand(name *string) *cobra.Command {
	var grace time.Duration
	cmd := labCommand(name, "stop NODE|DAEMON", "Stop a daemon of the lab (a node name stops its minilet) until minilab start or heal",
		cobra.ExactArgs(1), func(cmd *cobra.Command, l *lab.Lab, args []string) error {
			process := processName(l, args[0])
			if err := l.StopProcess(process, grace); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s stopped\n", process)
			return nil
		})
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "time between SIGTERM and SIGKILL (0: killed at once, as in a crash)")
	return cmd
}

func startCommand(name *string) *cobra.Command {
	return labCommand(name, "start NODE|DAEMON", "Start again a daemon minilab stop stopped",
		cobra.ExactArgs(1), func(cmd *cobra.Command, l *lab.Lab, args []string) error {
			process := processName(l, args[0])
			pid, err := l.StartProcess(process)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s started as PID %d\n", process, pid)
			return nil
		})
}

func partitionCommand(name *string) *cobra.Command {
	var from []string
	cmd := labCommand(name, "partition NODE|cp-N... [--from cp|client|cp-N|NODE...]", "Drop every frame between the nodes (or control-plane members) and the rest of the lab (or --from members), both ways, on the lab switch",
		cobra.MinimumNArgs(1), func(cmd *cobra.Command, l *lab.Lab, args []string) error {
			if err := l.Partition(cmd.Context(), args, from); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "partitioned %s\n", strings.Join(args, " "))
			return nil
		})
	cmd.Flags().StringSliceVar(&from, "from", nil, "members to cut the nodes off from (default: every other member of their segment)")
	return cmd
}

func netemCommand(name *string) *cobra.Command {
	var n lab.Netem
	cmd := labCommand(name, "netem NODE [--delay 100ms [--jitter 10ms]] [--loss 5%] [--rate 1mbit]", "Add delay, loss or a rate limit to a node's uplink (tc netem on its eth0)",
		cobra.ExactArgs(1), func(cmd *cobra.Command, l *lab.Lab, args []string) error {
			if err := l.SetNetem(cmd.Context(), args[0], n); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "netem on %s\n", args[0])
			return nil
		})
	f := cmd.Flags()
	f.StringVar(&n.Delay, "delay", "", "added delay, as tc: 100ms")
	f.StringVar(&n.Jitter, "jitter", "", "delay variation, as tc: 10ms")
	f.StringVar(&n.Loss, "loss", "", "packets lost, as tc: 5%")
	f.StringVar(&n.Rate, "rate", "", "rate limit, as tc: 1mbit")
	return cmd
}

func linkCommand(name *string) *cobra.Command {
	return labCommand(name, "link down|up NODE", "Unplug a node's cable from the lab switch, or plug it back",
		cobra.ExactArgs(2), func(cmd *cobra.Command, l *lab.Lab, args []string) error {
			if args[0] != "down" && args[0] != "up" {
				return fmt.Errorf("link %q: want down or up", args[0])
			}
			if err := l.SetLink(args[1], args[0] == "up"); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "link of %s %s\n", args[1], args[0])
			return nil
		})
}

func healCommand(name *string) *cobra.Command {
	return labCommand(name, "heal", "Undo every fault: start stopped daemons, remove partitions and netem, plug links back",
		cobra.NoArgs, func(cmd *cobra.Command, l *lab.Lab, _ []string) error {
			n := len(l.Faults)
			if err := l.Heal(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "healed %d fault(s)\n", n)
			return nil
		})
}

func uplinkEchoCommand() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "uplink-echo --listen ADDR",
		Short: "Serve HTTP answering each request with the caller's address (minilab up --uplink runs it on the uplink host)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			ctx, stop := daemon.SignalContext()
			defer stop()
			srv := &http.Server{Handler: echo.Handler(), ReadHeaderTimeout: 10 * time.Second}
			context.AfterFunc(ctx, func() { srv.Close() })
			daemon.Logger(false).Info("serving the caller's address", "addr", listen)
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", net.JoinHostPort(lab.UplinkHostIP, "80"), "address to serve on")
	return cmd
}
