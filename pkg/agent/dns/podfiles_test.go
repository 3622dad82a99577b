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
		mounts, ev, err := c.PodMounts(dir, pod, pod.Name, ip, mounts)
		events = append(events, ev...)
		return mounts, err
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1"}}
	ip := []byte{10, 244, 1, 5}

	mounts, err := podMounts(pod, ip, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 2 || mounts[0].ContainerPath != "/etc/resolv.conf" || mounts[1].ContainerPath != "/etc/hosts" {
		t.Fatalf("mounts %+v", mounts)
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
	if len(mounts) != 2 || mounts[0].HostPath != "/x" || mounts[1].ContainerPath != "/etc/hosts" {
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
