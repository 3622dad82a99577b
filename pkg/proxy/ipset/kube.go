package ipset

// kube-proxy's sets in IPVS mode, by kube-proxy's names, types and comments, so that
// `ipset list` reads as on any IPVS-mode node.
const (
	LoopBack               = "KUBE-LOOP-BACK"
	ClusterIP              = "KUBE-CLUSTER-IP"
	ExternalIP             = "KUBE-EXTERNAL-IP"
	ExternalIPLocal        = "KUBE-EXTERNAL-IP-LOCAL"
	LoadBalancer           = "KUBE-LOAD-BALANCER"
	LoadBalancerFW         = "KUBE-LOAD-BALANCER-FW"
	LoadBalancerLocal      = "KUBE-LOAD-BALANCER-LOCAL"
	LoadBalancerSourceIP   = "KUBE-LOAD-BALANCER-SOURCE-IP"
	LoadBalancerSourceCIDR = "KUBE-LOAD-BALANCER-SOURCE-CIDR"
	NodePortTCP            = "KUBE-NODE-PORT-TCP"
	NodePortLocalTCP       = "KUBE-NODE-PORT-LOCAL-TCP"
	NodePortUDP            = "KUBE-NODE-PORT-UDP"
	NodePortLocalUDP       = "KUBE-NODE-PORT-LOCAL-UDP"
	NodePortSCTP           = "KUBE-NODE-PORT-SCTP-HASH"
	NodePortLocalSCTP      = "KUBE-NODE-PORT-LOCAL-SCTP-HASH"
	HealthCheckNodePort    = "KUBE-HEALTH-CHECK-NODE-PORT"
	IPVSIPs                = "KUBE-IPVS-IPS"
)

var kubeSets = []struct {
	name    string
	typ     Type
	comment string
}{
	{LoopBack, HashIPPortIP, "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose"},
	{ClusterIP, HashIPPort, "Kubernetes service cluster ip + port for masquerade purpose"},
	{ExternalIP, HashIPPort, "Kubernetes service external ip + port for masquerade and filter purpose"},
	{ExternalIPLocal, HashIPPort, "Kubernetes service external ip + port with externalTrafficPolicy=local"},
	{LoadBalancer, HashIPPort, "Kubernetes service lb portal"},
	{LoadBalancerFW, HashIPPort, "Kubernetes service load balancer ip + port for load balancer with sourceRange"},
	{LoadBalancerLocal, HashIPPort, "Kubernetes service load balancer ip + port with externalTrafficPolicy=local"},
	{LoadBalancerSourceIP, HashIPPortIP, "Kubernetes service load balancer ip + port + source IP for packet filter purpose"},
	{LoadBalancerSourceCIDR, HashIPPortNet, "Kubernetes service load balancer ip + port + source cidr for packet filter purpose"},
	{NodePortTCP, BitmapPort, "Kubernetes nodeport TCP port for masquerade purpose"},
	{NodePortLocalTCP, BitmapPort, "Kubernetes nodeport TCP port with externalTrafficPolicy=local"},
	{NodePortUDP, BitmapPort, "Kubernetes nodeport UDP port for masquerade purpose"},
	{NodePortLocalUDP, BitmapPort, "Kubernetes nodeport UDP port with externalTrafficPolicy=local"},
	{NodePortSCTP, HashIPPort, "Kubernetes nodeport SCTP port for masquerade purpose with type 'hash ip:port'"},
	{NodePortLocalSCTP, HashIPPort, "Kubernetes nodeport SCTP port with externalTrafficPolicy=local with type 'hash ip:port'"},
	{HealthCheckNodePort, BitmapPort, "Kubernetes health check node port"},
	{IPVSIPs, HashIP, "Kubernetes all IPVS IPs"},
}

// KubeSets are kube-proxy's IPVS-mode sets, empty, by name.
func KubeSets() map[string]*Set {
	out := make(map[string]*Set, len(kubeSets))
	for _, k := range kubeSets {
		out[k.name] = New(k.name, k.typ, k.comment)
	}
	return out
}

// KubeSetNames lists kube-proxy's IPVS-mode set names in a fixed order.
func KubeSetNames() []string {
	out := make([]string, len(kubeSets))
	for i, k := range kubeSets {
		out[i] = k.name
	}
	return out
}
