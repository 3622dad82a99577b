package podsync

import (
	"net"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/minik8s/minik8s/pkg/agent/dns"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// TestPodDNSMounts: a container gets the pod's resolv.conf and hosts file, written once
// per sandbox, unless it mounts something at those paths itself.
func TestPodDNSMounts(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	a := &Syncer{cfg: Config{PodsDir: t.TempDir(), DNS: &dns.Configurer{ClusterDNS: []net.IP{net.ParseIP("10.96.0.10")}, ClusterDomain: "cluster.local"}}, recorder: rec}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1"}}
	ip := []byte{10, 244, 1, 5}

	mounts, err := a.podDNSMounts(pod, ip, nil)
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
	mounts, err = a.podDNSMounts(pod, ip, own)
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 2 || mounts[0].HostPath != "/x" || mounts[1].ContainerPath != "/etc/hosts" {
		t.Errorf("a container's own /etc/resolv.conf mount must win: %+v", mounts)
	}
	if hosts, _ := os.ReadFile(a.podHostsFile(pod)); string(hosts) != "kept\n" {
		t.Errorf("the hosts file was rewritten for a second container: %q", hosts)
	}
	if err := a.removePodDNSFiles(pod); err != nil {
		t.Fatal(err)
	}
	if _, err := a.podDNSMounts(pod, []byte{10, 244, 1, 9}, nil); err != nil {
		t.Fatal(err)
	}
	if hosts, _ := os.ReadFile(a.podHostsFile(pod)); !strings.Contains(string(hosts), "10.244.1.9\tweb") {
		t.Errorf("a new sandbox's hosts file:\n%s", hosts)
	}
	if len(rec.Events) != 0 {
		t.Errorf("events %v", <-rec.Events)
	}
}
