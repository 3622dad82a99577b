package agent

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/stats"
)

// TestConfigValidateNodeAPIFlags: the node API takes its certificate from files or from
// CSRs (--rotate-server-certificates), never both, and always needs the client CA.
func TestConfigValidateNodeAPIFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" accepted
	}{
		{"files", Config{TLSCertFile: "c", TLSPrivateKeyFile: "k", ClientCAFile: "ca"}, ""},
		{"files without key", Config{TLSCertFile: "c", ClientCAFile: "ca"}, "needs all of --tls-cert-file"},
		{"rotating", Config{RotateServerCertificates: true, ClientCAFile: "ca"}, ""},
		{"rotating and files", Config{RotateServerCertificates: true, TLSCertFile: "c", TLSPrivateKeyFile: "k", ClientCAFile: "ca"}, "drop --tls-cert-file"},
		{"rotating without client CA", Config{RotateServerCertificates: true}, "needs --client-ca-file"},
	} {
		err := tc.cfg.Validate()
		nodeAPIErr := err != nil && (strings.Contains(err.Error(), "--tls-cert-file") || strings.Contains(err.Error(), "--client-ca-file"))
		switch {
		case tc.want == "" && nodeAPIErr:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	if !(Config{RotateServerCertificates: true}).ServesNodeAPI() || (Config{}).ServesNodeAPI() {
		t.Error("servesNodeAPI")
	}
}

func TestConfigValidateNamesFlags(t *testing.T) {
	err := Config{NodeIP: "x", PodCIDR: "10.0.0.0", RootDir: "rel", InsecureRegistries: []string{"http://r.lab/x"}, AllowedUnsafeSysctls: []string{"vm.swappiness"}}.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, flag := range []string{"--node-name", "--node-ip", "--pod-cidr", "--root-dir", "--containerd", "--insecure-registry", "--cgroup-root", "--allowed-unsafe-sysctls"} {
		if !strings.Contains(err.Error(), flag) {
			t.Errorf("error does not name %s: %v", flag, err)
		}
	}
}

func TestConfigValidateDNSFlags(t *testing.T) {
	err := Config{ClusterDNS: []string{"10.96.0.10", "ten"}, ClusterDomain: "Cluster_Local", ResolvConf: "resolv.conf"}.validateDNS()
	for _, want := range []string{`(--cluster-dns) "ten"`, `(--cluster-domain) "Cluster_Local"`, `--resolv-conf "resolv.conf"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
	if err := (Config{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", ResolvConf: ""}).validateDNS(); err != nil {
		t.Errorf("good DNS settings refused: %v", err)
	}
}

func TestConfigValidateEvictionFlags(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Eviction: stats.EvictionFlags{Soft: "memory.available<1Gi"}}, "grace period must be specified for the soft eviction threshold memory.available"},
		{Config{Eviction: stats.EvictionFlags{MinimumReclaim: "memory.available=lots"}}, "--eviction-minimum-reclaim"},
		{Config{EvictionMaxPodGracePeriod: -time.Second}, "--eviction-max-pod-grace-period -1"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.cfg.Eviction, err, tc.want)
		}
	}
}

// TestKubeletConfiguration: /configz's KubeletConfiguration holds the flags' values in the
// kubelet's shapes: eviction thresholds as signal → value maps, the healthz address split.
func TestKubeletConfiguration(t *testing.T) {
	kc := Config{HealthzAddr: "127.0.0.1:10248", Port: 10250, TLSCertFile: "c", TLSPrivateKeyFile: "k", ClientCAFile: "ca",
		ContainerdAddress: "/run/containerd/containerd.sock",
		Eviction: stats.EvictionFlags{Hard: "memory.available<100Mi,nodefs.available<10%", Soft: "memory.available<300Mi",
			SoftGracePeriod: "memory.available=1m30s", MinimumReclaim: "nodefs.available=500Mi"},
		EvictionMaxPodGracePeriod: 30 * time.Second}.KubeletConfiguration()
	for name, got := range map[string]string{
		"evictionHard memory":   kc.EvictionHard["memory.available"],
		"evictionHard nodefs":   kc.EvictionHard["nodefs.available"],
		"evictionSoft":          kc.EvictionSoft["memory.available"],
		"evictionSoftGrace":     kc.EvictionSoftGracePeriod["memory.available"],
		"evictionMinReclaim":    kc.EvictionMinimumReclaim["nodefs.available"],
		"healthzBindAddress":    kc.HealthzBindAddress,
		"healthzPort":           strconv.Itoa(int(*kc.HealthzPort)),
		"runtime endpoint":      kc.ContainerRuntimeEndpoint,
		"maxPodGracePeriod (s)": strconv.Itoa(int(kc.EvictionMaxPodGracePeriod)),
	} {
		want := map[string]string{"evictionHard memory": "100Mi", "evictionHard nodefs": "10%", "evictionSoft": "300Mi",
			"evictionSoftGrace": "1m30s", "evictionMinReclaim": "500Mi", "healthzBindAddress": "127.0.0.1", "healthzPort": "10248",
			"runtime endpoint": "unix:///run/containerd/containerd.sock", "maxPodGracePeriod (s)": "30"}[name]
		if got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if len(kc.EvictionHard) != 2 || kc.Port != 10250 || !*kc.EnableServer {
		t.Errorf("evictionHard %v, port %d, enableServer %v", kc.EvictionHard, kc.Port, *kc.EnableServer)
	}
}
