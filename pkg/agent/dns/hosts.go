package dns

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The first line of the hosts files, as the kubelet writes them.
const (
	hostsHeader            = "# Kubernetes-managed hosts file.\n"
	hostsHeaderHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// HostsFile is pod's /etc/hosts: localhost, the pod's own addresses under its hostname
// (and its fully qualified name when it has a subdomain and no hostnameOverride), then its
// hostAliases. A hostNetwork pod gets the node's hosts file (nodeHosts) instead of the
// first two parts.
func (c *Configurer) HostsFile(pod *corev1.Pod, hostname string, podIPs []string, nodeHosts string) ([]byte, error) {
	var b bytes.Buffer
	if pod.Spec.HostNetwork {
		node, err := os.ReadFile(nodeHosts)
		if err != nil {
			return nil, fmt.Errorf("the node's hosts file: %w", err)
		}
		b.WriteString(hostsHeaderHostNetwork)
		b.Write(node)
	} else {
		b.WriteString(hostsHeader)
		b.WriteString("127.0.0.1\tlocalhost\n")
		b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\n")
		b.WriteString("fe00::0\tip6-mcastprefix\n")
		b.WriteString("fe00::1\tip6-allnodes\n")
		b.WriteString("fe00::2\tip6-allrouters\n")
		for _, ip := range podIPs {
			if sub := subdomain(pod); sub != "" && c.ClusterDomain != "" {
				fmt.Fprintf(&b, "%s\t%s.%s.%s.svc.%s\t%s\n", ip, hostname, sub, pod.Namespace, c.ClusterDomain, hostname)
			} else {
				fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
			}
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.Bytes(), nil
}

// subdomain is the pod's spec.subdomain, none with a spec.hostnameOverride: the kubelet's
// GeneratePodHostNameAndDomain gives an overridden hostname no domain, so neither the hosts
// file nor the kernel's hostname names the pod by its fully qualified name.
func subdomain(pod *corev1.Pod) string {
	if pod.Spec.HostnameOverride != nil {
		return ""
	}
	return pod.Spec.Subdomain
}
