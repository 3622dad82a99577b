package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/minik8s/minik8s/deploy/addons"
	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/pki"
)

// DNSImages are preloaded too when Options.DNS is set: CoreDNS, and dnsutils to debug
// DNS with (docs/dns.md).
var DNSImages = []string{"coredns.tar", "dnsutils.tar"}

// images are the tarballs preloaded on every node.
func (o Options) images() []string {
	if o.DNS {
		return slices.Concat(Images, DNSImages)
	}
	return Images
}

// deployDNS installs the CoreDNS add-on: its kubeconfig Secret (a client certificate for
// CoreDNS's ServiceAccount user, until ServiceAccount tokens exist) and deploy/addons'
// manifest, then waits for CoreDNS to be Ready.
func deployDNS(ctx context.Context, l *lab.Lab, ca *pki.CA, progress io.Writer) error {
	step(progress, "deploying cluster DNS (CoreDNS at %s)", addons.ClusterDNSIP)
	kubeconfig := filepath.Join(l.StateDir, "coredns.kubeconfig")
	if err := ca.WriteKubeconfig(kubeconfig, serverURL(), addons.CoreDNSUser, addons.CoreDNSGroups); err != nil {
		return err
	}
	if _, err := Kubectl(ctx, l, "-n", "kube-system", "create", "secret", "generic", addons.CoreDNSSecret,
		"--from-file=kubeconfig="+kubeconfig); err != nil {
		return err
	}
	manifest := filepath.Join(l.StateDir, "coredns.yaml")
	if err := os.WriteFile(manifest, addons.CoreDNS, 0o644); err != nil {
		return err
	}
	if _, err := Kubectl(ctx, l, "apply", "-f", manifest); err != nil {
		return err
	}
	if _, err := Kubectl(ctx, l, "-n", "kube-system", "rollout", "status", "deployment/coredns", "--timeout=120s"); err != nil {
		return fmt.Errorf("cluster DNS did not become ready: %w", err)
	}
	return nil
}
