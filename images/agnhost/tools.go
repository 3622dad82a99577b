package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// entrypointTesterCommand prints every argument of the process, the program's path
// among them, as upstream's: the Containers tests run it as /agnhost and as /agnhost-2.
func entrypointTesterCommand() *cobra.Command {
	return &cobra.Command{
		Use:                "entrypoint-tester",
		Short:              "Prints the args it is passed and exits",
		DisableFlagParsing: true,
		Run:                func(*cobra.Command, []string) { fmt.Printf("%v\n", os.Args) },
	}
}

// logsGeneratorCommand writes --log-lines-total apiserver-like klog lines, evenly over
// --run-duration (the kubectl logs tests count them).
func logsGeneratorCommand() *cobra.Command {
	var total int
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "logs-generator",
		Short: "Outputs lines of logs to stdout uniformly",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if total <= 0 || duration <= 0 {
				return fmt.Errorf("--log-lines-total (%d) and --run-duration (%v) must be positive", total, duration)
			}
			ticker := time.NewTicker(duration / time.Duration(total))
			defer ticker.Stop()
			for id := range total {
				klog.Info(logLine(id))
				<-ticker.C
			}
			klog.Flush()
			return nil
		},
	}
	cmd.Flags().IntVarP(&total, "log-lines-total", "t", 0, "total lines to write by the end of the run")
	cmd.Flags().DurationVarP(&duration, "run-duration", "d", 0, "total duration of the run")
	return cmd
}

func logLine(id int) string {
	methods, namespaces := []string{"GET", "POST", "PUT"}, []string{"kube-system", "default", "ns"}
	name := make([]byte, 3+rand.IntN(2))
	for i := range name {
		name[i] = "bcdfghjklmnpqrstvwxz2456789"[rand.IntN(27)]
	}
	return fmt.Sprintf("%d %s /api/v1/namespaces/%s/pods/%s %d", id, methods[rand.IntN(3)],
		namespaces[rand.IntN(3)], name, 200+rand.IntN(400))
}

// resolvConfCommand prints the fields of the first resolv.conf line starting with key,
// comma-separated (dns-suffix: "search", dns-server-list: "nameserver").
func resolvConfCommand(use, key, short string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fields, err := resolvConfField("/etc/resolv.conf", key)
			if err != nil {
				return err
			}
			fmt.Println(strings.Join(fields, ","))
			return nil
		},
	}
}

func resolvConfField(path, key string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		if fields := strings.Fields(lines.Text()); len(fields) > 0 && fields[0] == key {
			return fields[1:], nil
		}
	}
	if err := lines.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("no %q line in %s", key, path)
}

// etcHostsCommand prints /etc/hosts.
func etcHostsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "etc-hosts",
		Short: "Prints the host's /etc/hosts file",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			data, err := os.ReadFile("/etc/hosts")
			if err != nil {
				return err
			}
			fmt.Println(string(data))
			return nil
		},
	}
}
