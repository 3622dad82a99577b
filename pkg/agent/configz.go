package agent

import (
	"net"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/minik8s/minik8s/pkg/agent/nodestatus"
)

// KubeletConfiguration is c in the kubelet's configuration type, which the node API serves
// at /configz as the kubelet does: tools that read a kubelet's settings
// (kubectl get --raw /api/v1/nodes/NODE/proxy/configz) read minilet's. Only what a flag
// of minilet decides is filled in.
func (c Config) KubeletConfiguration() *kubeletconfig.KubeletConfiguration {
	hard, soft, grace, reclaim := c.Eviction.Maps()
	healthzHost, healthzPort, _ := net.SplitHostPort(c.HealthzAddr)
	port, _ := strconv.ParseInt(healthzPort, 10, 32)
	return &kubeletconfig.KubeletConfiguration{
		EnableServer:                     ptr.To(c.ServesNodeAPI()),
		StaticPodPath:                    c.PodManifestPath,
		FileCheckFrequency:               metav1.Duration{Duration: c.FileCheckFrequency},
		Address:                          c.NodeIP,
		Port:                             int32(c.Port),
		TLSCertFile:                      c.TLSCertFile,
		TLSPrivateKeyFile:                c.TLSPrivateKeyFile,
		ServerTLSBootstrap:               c.RotateServerCertificates,
		Authentication:                   kubeletconfig.KubeletAuthentication{X509: kubeletconfig.KubeletX509Authentication{ClientCAFile: c.ClientCAFile}},
		Authorization:                    kubeletconfig.KubeletAuthorization{Mode: kubeletconfig.KubeletAuthorizationModeWebhook},
		HealthzBindAddress:               healthzHost,
		HealthzPort:                      ptr.To(int32(port)),
		EnableProfilingHandler:           ptr.To(c.Profiling),
		ClusterDomain:                    c.ClusterDomain,
		ClusterDNS:                       c.ClusterDNS,
		ResolverConfig:                   ptr.To(c.ResolvConf),
		PodCIDR:                          c.PodCIDR,
		MaxPods:                          nodestatus.MaxPods,
		PodPidsLimit:                     ptr.To(c.PodMaxPids),
		CgroupRoot:                       c.CgroupRoot,
		CgroupDriver:                     "cgroupfs",
		ContainerRuntimeEndpoint:         "unix://" + c.ContainerdAddress,
		ImageGCHighThresholdPercent:      ptr.To(int32(c.ImageGCHighThreshold)),
		ImageGCLowThresholdPercent:       ptr.To(int32(c.ImageGCLowThreshold)),
		EvictionHard:                     hard,
		EvictionSoft:                     soft,
		EvictionSoftGracePeriod:          grace,
		EvictionMinimumReclaim:           reclaim,
		EvictionMaxPodGracePeriod:        int32(c.EvictionMaxPodGracePeriod.Seconds()),
		EvictionPressureTransitionPeriod: metav1.Duration{Duration: c.EvictionPressureTransitionPeriod},
		SystemReserved:                   c.SystemReserved,
		KubeReserved:                     c.KubeReserved,
		ContainerLogMaxSize:              c.ContainerLogMaxSize,
		ContainerLogMaxFiles:             ptr.To(int32(c.ContainerLogMaxFiles)),
	}
}
