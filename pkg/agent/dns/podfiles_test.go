package dns

import (
	"net"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// TestPodMounts: a container gets the pod's resolv.conf and hosts file, written once
// per sandbox, unless it mounts something at those paths itself.
func TestPodMounts(t *testing.T) {
	dir := t.TempDir()
	c := &Configurer{ClusterDNS: []net.IP{net.ParseIP("10.96.0.10")}, ClusterDomain: "cluster.local"}
	var events []Event
	podMounts := func(pod *corev1.Pod, ip net.IP, mounts []runtime.Mount) ([]runtime.Mount, error) {
		mounts, ev, err := c.PodMounts(dir, pod, pod.Name, pod.Name+".kernel", ip, mounts)
		events = append(events, ev...)
		return mounts, err
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1"}}
	ip := []byte{10, 244, 1, 5}

	mounts, err := podMounts(pod, ip, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 3 || mounts[0].ContainerPath != "/etc/resolv.conf" || mounts[1].ContainerPath != "/etc/hosts" || mounts[2].ContainerPath != "/etc/hostname" {
		t.Fatalf("mounts %+v", mounts)
	}
	if hostname, _ := os.ReadFile(mounts[2].HostPath); string(hostname) != "web.kernel\n" {
		t.Errorf("/etc/hostname %q, want the sandbox's hostname", hostname)
	}
	resolv, _ := os.ReadFile(mounts[0].HostPath)
	if want := "search shop.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n"; string(resolv) != want {
		t.Errorf("resolv.conf %q, want %q", resolv, want)
	}
	hosts, _ := os.ReadFile(mounts[1].HostPath)
	if !strings.HasSuffix(string(hosts), "\n10.244.1.5\tweb\n") {
		t.Errorf("hosts file:\n%s", hosts)
	}

	// The next container of the sandbox finds them written; a new sandbox writes anew.
	if err := os.WriteFile(mounts[1].HostPath, []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	own := []runtime.Mount{{HostPath: "/x", ContainerPath: "/etc/resolv.conf/"}}
	mounts, err = podMounts(pod, ip, own)
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 3 || mounts[0].HostPath != "/x" || mounts[1].ContainerPath != "/etc/hosts" {
		t.Errorf("a container's own /etc/resolv.conf mount must win: %+v", mounts)
	}
	if hosts, _ := os.ReadFile(podHostsFile(dir)); string(hosts) != "kept\n" {
		t.Errorf("the hosts file was rewritten for a second container: %q", hosts)
	}
	if err := RemovePodFiles(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := podMounts(pod, []byte{10, 244, 1, 9}, nil); err != nil {
		t.Fatal(err)
	}
	if hosts, _ := os.ReadFile(podHostsFile(dir)); !strings.Contains(string(hosts), "10.244.1.9\tweb") {
		t.Errorf("a new sandbox's hosts file:\n%s", hosts)
	}
	if len(events) != 0 {
		t.Errorf("events %v", events)
	}
}

// TestKernelHostname: with setHostnameAsFQDN and a subdomain (and no hostnameOverride) the
// sandbox's hostname is the pod's fully qualified name, refused past 64 characters, as the
// kubelet's.
func TestKernelHostname(t *testing.T) {
	c := &Configurer{ClusterDomain: "cluster.local"}
	yes := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: corev1.PodSpec{Subdomain: "sub"}}
	if h, err := c.KernelHostname(pod, "web"); err != nil || h != "web" {
		t.Errorf("without setHostnameAsFQDN: %q %v", h, err)
	}
	pod.Spec.SetHostnameAsFQDN = &yes
	if h, err := c.KernelHostname(pod, "web"); err != nil || h != "web.sub.shop.svc.cluster.local" {
		t.Errorf("setHostnameAsFQDN: %q %v", h, err)
	}
	pod.Spec.Subdomain = ""
	if h, err := c.KernelHostname(pod, "web"); err != nil || h != "web" {
		t.Errorf("setHostnameAsFQDN without a subdomain: %q %v", h, err)
	}
	// An overridden hostname has no domain (the API refuses it with setHostnameAsFQDN).
	pod.Spec.Subdomain, pod.Spec.HostnameOverride = "sub", new("over")
	if h, err := c.KernelHostname(pod, "over"); err != nil || h != "over" {
		t.Errorf("setHostnameAsFQDN with hostnameOverride: %q %v", h, err)
	}
	pod.Spec.HostnameOverride = nil
	pod.Spec.Subdomain = strings.Repeat("s", 40)
	want := "failed to construct FQDN from pod hostname and cluster domain, FQDN web." + pod.Spec.Subdomain + ".shop.svc.cluster.local is too long (64 characters is the max, 67 characters requested)"
	if _, err := c.KernelHostname(pod, "web"); err == nil || err.Error() != want {
		t.Errorf("a long FQDN: %v, want %q", err, want)
	}
}
