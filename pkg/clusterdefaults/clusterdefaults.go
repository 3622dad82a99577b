// Package clusterdefaults holds the defaults more than one component has to agree on — the
// cluster's address ranges and the daemons' well-known ports — written once, as Kubernetes
// keeps its ports in pkg/cluster/ports. Each daemon's flags take their defaults from here
// (controlplane.Options.AddFlags, server.Options.AddFlags), and minilab and the benchmarks
// pass these values rather than writing them again.
package clusterdefaults

const (
	// ServiceCIDR is kube-apiserver's default --service-cluster-ip-range.
	ServiceCIDR = "10.96.0.0/12"
	// ClusterCIDR is the pods' range nodes' podCIDRs are cut from (miniapi --cluster-cidr;
	// miniproxy --cluster-cidr must name the same), flannel's and kubeadm's usual one.
	ClusterCIDR = "10.244.0.0/16"
	// NodeCIDRMaskSize is kube-controller-manager's default --node-cidr-mask-size.
	NodeCIDRMaskSize = 24

	// APIServerPort is kube-apiserver's default --secure-port.
	APIServerPort = 6443
	// ProxyMetricsAddress and ProxyHealthzPort are kube-proxy's defaults: /metrics on
	// loopback, /healthz on every address (load balancers and miniproxy's layer-2 election
	// probe it).
	ProxyMetricsAddress = "127.0.0.1:10249"
	ProxyHealthzPort    = 10256
)
