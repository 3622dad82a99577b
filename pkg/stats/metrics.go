package stats

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// ResourceMetrics is the kubelet's /metrics/resource: the CPU and memory figures
// metrics-server reads, with the sample's timestamps.
type ResourceMetrics struct{ Latest func() *Snapshot }

var (
	resNodeCPU = prometheus.NewDesc("node_cpu_usage_seconds_total", "[STABLE] Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	resNodeMem = prometheus.NewDesc("node_memory_working_set_bytes", "[STABLE] Current working set of the node in bytes", nil, nil)
	resCtrCPU  = prometheus.NewDesc("container_cpu_usage_seconds_total", "[STABLE] Cumulative cpu time consumed by the container in core-seconds", []string{"container", "pod", "namespace"}, nil)
	resCtrMem  = prometheus.NewDesc("container_memory_working_set_bytes", "[STABLE] Current working set of the container in bytes", []string{"container", "pod", "namespace"}, nil)
	resCtrUp   = prometheus.NewDesc("container_start_time_seconds", "[STABLE] Start time of the container since unix epoch in seconds", []string{"container", "pod", "namespace"}, nil)
	resPodCPU  = prometheus.NewDesc("pod_cpu_usage_seconds_total", "[STABLE] Cumulative cpu time consumed by the pod in core-seconds", []string{"pod", "namespace"}, nil)
	resPodMem  = prometheus.NewDesc("pod_memory_working_set_bytes", "[STABLE] Current working set of the pod in bytes", []string{"pod", "namespace"}, nil)
	resErr     = prometheus.NewDesc("resource_scrape_error", "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

func (ResourceMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{resNodeCPU, resNodeMem, resCtrCPU, resCtrMem, resCtrUp, resPodCPU, resPodMem, resErr} {
		ch <- d
	}
}

func (m ResourceMetrics) Collect(ch chan<- prometheus.Metric) {
	snap := m.Latest()
	if snap == nil {
		ch <- prometheus.MustNewConstMetric(resErr, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(resErr, prometheus.GaugeValue, 0)
	n := snap.Summary.Node
	cpuSeconds(ch, resNodeCPU, n.CPU)
	workingSet(ch, resNodeMem, n.Memory)
	for _, p := range snap.Summary.Pods {
		for _, c := range p.Containers {
			cpuSeconds(ch, resCtrCPU, c.CPU, c.Name, p.PodRef.Name, p.PodRef.Namespace)
			workingSet(ch, resCtrMem, c.Memory, c.Name, p.PodRef.Name, p.PodRef.Namespace)
			ch <- prometheus.MustNewConstMetric(resCtrUp, prometheus.GaugeValue, float64(c.StartTime.Unix()), c.Name, p.PodRef.Name, p.PodRef.Namespace)
		}
		cpuSeconds(ch, resPodCPU, p.CPU, p.PodRef.Name, p.PodRef.Namespace)
		workingSet(ch, resPodMem, p.Memory, p.PodRef.Name, p.PodRef.Namespace)
	}
}

func cpuSeconds(ch chan<- prometheus.Metric, d *prometheus.Desc, s *statsapi.CPUStats, labels ...string) {
	if s == nil || s.UsageCoreNanoSeconds == nil {
		return
	}
	ch <- stamped(s.Time.Time, prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(*s.UsageCoreNanoSeconds)/1e9, labels...))
}

func workingSet(ch chan<- prometheus.Metric, d *prometheus.Desc, s *statsapi.MemoryStats, labels ...string) {
	if s == nil || s.WorkingSetBytes == nil {
		return
	}
	ch <- stamped(s.Time.Time, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(*s.WorkingSetBytes), labels...))
}

func stamped(t time.Time, m prometheus.Metric) prometheus.Metric {
	return prometheus.NewMetricWithTimestamp(t, m)
}

// CadvisorMetrics is the kubelet's /metrics/cadvisor: cAdvisor's metric names and labels
// (container, id, image, name, namespace, pod) for the containers and pods sampled.
type CadvisorMetrics struct{ Latest func() *Snapshot }

var (
	cadLabels    = []string{"container", "id", "image", "name", "namespace", "pod"}
	cadNetLabels = append(append([]string(nil), cadLabels...), "interface")
	cadCPU       = prometheus.NewDesc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", append(append([]string(nil), cadLabels...), "cpu"), nil)
	cadMemUsage  = prometheus.NewDesc("container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed", cadLabels, nil)
	cadMemWS     = prometheus.NewDesc("container_memory_working_set_bytes", "Current working set in bytes.", cadLabels, nil)
	cadMemRSS    = prometheus.NewDesc("container_memory_rss", "Size of RSS in bytes.", cadLabels, nil)
	cadFsUsage   = prometheus.NewDesc("container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.", cadLabels, nil)
	cadStart     = prometheus.NewDesc("container_start_time_seconds", "Start time of the container since unix epoch in seconds.", cadLabels, nil)
	cadLastSeen  = prometheus.NewDesc("container_last_seen", "Last time a container was seen by the exporter", cadLabels, nil)
	cadProcs     = prometheus.NewDesc("container_processes", "Number of processes running inside the container.", cadLabels, nil)
	cadRx        = prometheus.NewDesc("container_network_receive_bytes_total", "Cumulative count of bytes received", cadNetLabels, nil)
	cadTx        = prometheus.NewDesc("container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", cadNetLabels, nil)
	cadRxErr     = prometheus.NewDesc("container_network_receive_errors_total", "Cumulative count of errors encountered while receiving", cadNetLabels, nil)
	cadTxErr     = prometheus.NewDesc("container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting", cadNetLabels, nil)
)

func (CadvisorMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cadCPU, cadMemUsage, cadMemWS, cadMemRSS, cadFsUsage, cadStart, cadLastSeen, cadProcs, cadRx, cadTx, cadRxErr, cadTxErr} {
		ch <- d
	}
}

func (m CadvisorMetrics) Collect(ch chan<- prometheus.Metric) {
	snap := m.Latest()
	if snap == nil {
		return
	}
	info := map[[3]string]ContainerInfo{}
	for _, c := range snap.Containers {
		info[[3]string{c.Namespace, c.Pod, c.Container}] = c
	}
	for _, p := range snap.Summary.Pods {
		ns, pod := p.PodRef.Namespace, p.PodRef.Name
		for _, c := range p.Containers {
			ci := info[[3]string{ns, pod, c.Name}]
			labels := []string{c.Name, ci.Cgroup, ci.Image, ci.ID, ns, pod}
			cadvisorUsage(ch, labels, c.CPU, c.Memory)
			if c.Rootfs != nil && c.Rootfs.UsedBytes != nil {
				ch <- prometheus.MustNewConstMetric(cadFsUsage, prometheus.GaugeValue, float64(*c.Rootfs.UsedBytes), labels...)
			}
			ch <- prometheus.MustNewConstMetric(cadStart, prometheus.GaugeValue, float64(c.StartTime.Unix()), labels...)
		}
		// The pod's cgroup, as cAdvisor exports every cgroup: no container name or image.
		labels := []string{"", snap.PodCgroups[p.PodRef.UID], "", "", ns, pod}
		cadvisorUsage(ch, labels, p.CPU, p.Memory)
		if p.ProcessStats != nil && p.ProcessStats.ProcessCount != nil {
			ch <- prometheus.MustNewConstMetric(cadProcs, prometheus.GaugeValue, float64(*p.ProcessStats.ProcessCount), labels...)
		}
		if p.Network != nil {
			for _, i := range p.Network.Interfaces {
				l := append(append([]string(nil), labels...), i.Name)
				for d, v := range map[*prometheus.Desc]*uint64{cadRx: i.RxBytes, cadTx: i.TxBytes, cadRxErr: i.RxErrors, cadTxErr: i.TxErrors} {
					if v != nil {
						ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(*v), l...)
					}
				}
			}
		}
	}
}

func cadvisorUsage(ch chan<- prometheus.Metric, labels []string, cpu *statsapi.CPUStats, mem *statsapi.MemoryStats) {
	if cpu != nil && cpu.UsageCoreNanoSeconds != nil {
		ch <- stamped(cpu.Time.Time, prometheus.MustNewConstMetric(cadCPU, prometheus.CounterValue, float64(*cpu.UsageCoreNanoSeconds)/1e9, append(append([]string(nil), labels...), "total")...))
		ch <- stamped(cpu.Time.Time, prometheus.MustNewConstMetric(cadLastSeen, prometheus.GaugeValue, float64(cpu.Time.Unix()), labels...))
	}
	if mem == nil {
		return
	}
	for d, v := range map[*prometheus.Desc]*uint64{cadMemUsage: mem.UsageBytes, cadMemWS: mem.WorkingSetBytes, cadMemRSS: mem.RSSBytes} {
		if v != nil {
			ch <- stamped(mem.Time.Time, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(*v), labels...))
		}
	}
}
