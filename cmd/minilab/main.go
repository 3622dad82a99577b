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
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/minik8s/minik8s/pkg/daemon"
	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/cluster"
	"github.com/minik8s/minik8s/pkg/lab/upstreamdns"
	"github.com/spf13/cobra"
)

func main() {
	err := newCommand().Execute()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode()) // kubectl/exec: pass the command's own exit code through
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
	root.AddCommand(upCommand(&name), downCommand(&name), infoCommand(&name), kubectlCommand(&name), execCommand(&name), loadCommand(&name), restartCommand(&name), netCommand(&name), explainCommand(&name), upstreamDNSCommand())
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
			if o.Nodes < 1 || o.Nodes > lab.MaxNodes {
				return fmt.Errorf("--nodes must be between 1 and %d, not %d", lab.MaxNodes, o.Nodes)
			}
			if o.Segments < 1 || o.Segments > lab.MaxSegments {
				return fmt.Errorf("--segments must be between 1 and %d, not %d", lab.MaxSegments, o.Segments)
			}
			if o.PodNetwork != "host-gw" && o.PodNetwork != "vxlan" {
				return fmt.Errorf("--pod-network must be host-gw or vxlan, not %q", o.PodNetwork)
			}
			o.Name, o.Progress = *name, cmd.OutOrStdout()
			ctx, stop := daemon.SignalContext()
			defer stop()
			l, err := cluster.Up(ctx, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "lab %q is up: minilab kubectl --name %s -- get nodes\n", l.Name, l.Name)
			return nil
		},
	}
	exe, _ := os.Executable()
	binDir := filepath.Dir(exe)
	cmd.Flags().IntVar(&o.Nodes, "nodes", 2, "number of nodes")
	cmd.Flags().StringVar(&o.BinDir, "bin-dir", binDir, "directory holding miniapi and minilet")
	cmd.Flags().StringVar(&o.ImagesDir, "images-dir", filepath.Join(binDir, "..", "images", "out"), "directory of the image tarballs from `make images`")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 3*time.Minute, "how long to wait for the cluster")
	cmd.Flags().StringVar(&o.PodNetwork, "pod-network", "host-gw", "how nodes' pods reach each other (minilet --pod-network): host-gw or vxlan")
	cmd.Flags().IntVar(&o.Segments, "segments", 1, "lab segments (switches) the nodes are spread over, joined only by a router namespace")
	cmd.Flags().BoolVar(&o.DNS, "dns", true, "deploy cluster DNS (CoreDNS at 10.96.0.10, docs/dns.md)")
	cmd.Flags().StringVar(&o.Join, "join", cluster.JoinCertificate, "how nodes get their credentials: certificate (issued by minilab from the CA) or token (a bootstrap token; each minilet requests its certificate through a CSR, docs/security.md)")
	return cmd
}

func netCommand(name *string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "net node-i",
		Short: "Show a node's pod network (minilet network in its namespace): bridge, veth pairs, routes, VXLAN entries",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := loadLab(*name)
			if err != nil {
				return err
			}
			exe, _ := os.Executable()
			for _, n := range l.Nodes {
				if n.Name == args[0] {
					return runAttached(lab.Command(context.Background(), n.NetNS, filepath.Join(filepath.Dir(exe), "minilet"),
						"network", "--root-dir", n.RunDir, "-o", output))
				}
			}
			return fmt.Errorf("lab %q has no node %q", *name, args[0])
		},
	}
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
			process := args[0]
			for _, n := range l.Nodes {
				if n.Name == process {
					process = "minilet-" + n.Name
				}
			}
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

func loadCommand(name *string) *cobra.Command {
	return &cobra.Command{
		Use:   "load TARBALL...",
		Short: "Import OCI image tarballs into every node's containerd, under the names they carry",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := loadLab(*name)
			if err != nil {
				return err
			}
			return cluster.LoadImages(context.Background(), l, args, cmd.OutOrStdout())
		},
	}
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
	Name       string     `json:"name"`
	Kubeconfig string     `json:"kubeconfig"`
	APIServer  string     `json:"apiServer"`
	NetNS      string     `json:"controlPlaneNetns"`
	PodNetwork string     `json:"podNetwork"`
	Segments   int        `json:"segments"`
	Nodes      []nodeInfo `json:"nodes"`
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
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Show the lab: kubeconfig and, per node, name, IP, network namespace and pod manifest directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := loadLab(*name)
			if err != nil {
				return err
			}
			in := info{Name: l.Name, Kubeconfig: l.Kubeconfig, APIServer: fmt.Sprintf("https://%s:%d", l.ControlPlane.IP, cluster.APIPort), NetNS: l.ControlPlane.NetNS,
				PodNetwork: l.PodNetwork, Segments: len(l.Switches)}
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
				for _, n := range in.Nodes {
					fmt.Fprintf(out, "  %-8s %-12s netns %-20s pods %-14s manifests %s\n", n.Name, n.IP, n.NetNS, n.PodCIDR, n.ManifestDir)
				}
				return nil
			default:
				return fmt.Errorf("-o %q: only json is supported", output)
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json")
	return cmd
}

func kubectlCommand(name *string) *cobra.Command {
	return &cobra.Command{
		Use:   "kubectl -- ARGS...",
		Short: "Run kubectl against the lab, from inside the lab",
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := loadLab(*name)
			if err != nil {
				return err
			}
			return runAttached(cluster.KubectlCommand(context.Background(), l, args...))
		},
	}
}

func execCommand(name *string) *cobra.Command {
	return &cobra.Command{
		Use:   "exec NODE -- COMMAND...",
		Short: "Run a command in a node's network namespace (NODE may also be cp)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := loadLab(*name)
			if err != nil {
				return err
			}
			netns := ""
			if args[0] == "cp" {
				netns = l.ControlPlane.NetNS
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
		},
	}
}

func explainCommand(name *string) *cobra.Command {
	var service, from, output string
	var port int32
	cmd := &cobra.Command{
		Use:   "explain NODE --service NAMESPACE/NAME [--from IP] [--port PORT] [-o json]",
		Short: "Run miniproxy explain in a node's network namespace: the path a packet to a Service takes there",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := loadLab(*name)
			if err != nil {
				return err
			}
			for _, n := range l.Nodes {
				if n.Name != args[0] {
					continue
				}
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				argv := []string{"explain", "--kubeconfig", filepath.Join(l.StateDir, n.Name+".kubeconfig"), "--service", service,
					"--from", from, "--port", fmt.Sprint(port), "--output", output}
				return runAttached(lab.Command(context.Background(), n.NetNS, filepath.Join(filepath.Dir(exe), "miniproxy"), argv...))
			}
			return fmt.Errorf("lab %q has no node %q", *name, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&service, "service", "", "the Service, NAMESPACE/NAME")
	f.StringVar(&from, "from", "", "source address of the packet (default: any)")
	f.Int32Var(&port, "port", 0, "a service port or node port (default: every port)")
	f.StringVarP(&output, "output", "o", "", "output format: json")
	_ = cmd.MarkFlagRequired("service")
	return cmd
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
