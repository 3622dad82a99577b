package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/minik8s/minik8s/pkg/control/controllers/clusterroleaggregation"
	"github.com/minik8s/minik8s/pkg/control/controllers/cronjob"
	"github.com/minik8s/minik8s/pkg/control/controllers/csrapproving"
	"github.com/minik8s/minik8s/pkg/control/controllers/csrcleaner"
	"github.com/minik8s/minik8s/pkg/control/controllers/csrsigning"
	"github.com/minik8s/minik8s/pkg/control/controllers/daemonset"
	"github.com/minik8s/minik8s/pkg/control/controllers/deployment"
	"github.com/minik8s/minik8s/pkg/control/controllers/disruption"
	"github.com/minik8s/minik8s/pkg/control/controllers/endpoints"
	"github.com/minik8s/minik8s/pkg/control/controllers/endpointslice"
	"github.com/minik8s/minik8s/pkg/control/controllers/endpointslicemirroring"
	"github.com/minik8s/minik8s/pkg/control/controllers/garbagecollector"
	"github.com/minik8s/minik8s/pkg/control/controllers/job"
	"github.com/minik8s/minik8s/pkg/control/controllers/loadbalancer"
	"github.com/minik8s/minik8s/pkg/control/controllers/localpath"
	"github.com/minik8s/minik8s/pkg/control/controllers/namespace"
	"github.com/minik8s/minik8s/pkg/control/controllers/nodeipam"
	"github.com/minik8s/minik8s/pkg/control/controllers/nodelifecycle"
	"github.com/minik8s/minik8s/pkg/control/controllers/podautoscaler"
	"github.com/minik8s/minik8s/pkg/control/controllers/policystatus"
	"github.com/minik8s/minik8s/pkg/control/controllers/pvbinder"
	"github.com/minik8s/minik8s/pkg/control/controllers/replicaset"
	"github.com/minik8s/minik8s/pkg/control/controllers/resourcequota"
	"github.com/minik8s/minik8s/pkg/control/controllers/rootcacertpublisher"
	"github.com/minik8s/minik8s/pkg/control/controllers/serviceaccount"
	"github.com/minik8s/minik8s/pkg/control/controllers/statefulset"
	"github.com/minik8s/minik8s/pkg/control/controllers/tokencleaner"
	"github.com/minik8s/minik8s/pkg/control/controllers/ttlafterfinished"
	"github.com/minik8s/minik8s/pkg/control/controllers/volumeprotection"
	"github.com/minik8s/minik8s/pkg/control/openapi"
	"github.com/minik8s/minik8s/pkg/pki"
	corev1 "k8s.io/api/core/v1"
	apiextensionsscheme "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/scheme"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	"k8s.io/utils/clock"
)

// ControllerContext is what every controller starts from: one client, the process's one
// informer factory (one watch and one cache per kind, shared by every controller, the
// scheduler, admission and authorization), one event broadcaster.
type ControllerContext struct {
	Config    *rest.Config // what Client is made from, for clients of other kinds
	Client    kubernetes.Interface
	Metadata  metadata.Interface
	Informers informers.SharedInformerFactory
	Options   Options
	Log       *slog.Logger
	// RootCA is the cluster CA's PEM, published in every namespace for pods.
	RootCA []byte
	// CA signs approved certificate requests (csrsigning).
	CA *pki.CA

	broadcaster record.EventBroadcaster
	// running counts the goroutines the controllers run on, so miniapi's Run returns only
	// after every one of them has.
	running *sync.WaitGroup
}

// goRun runs f (a controller's Run) on a goroutine that miniapi's Run waits for.
func (c *ControllerContext) goRun(f func()) { c.running.Go(f) }

// Recorder emits Events with component as their source, as kube-controller-manager's
// controllers do (source "deployment-controller", "replicaset-controller", ...).
func (c *ControllerContext) Recorder(component string) record.EventRecorder {
	return c.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
}

// controllerStart asks for the informers a controller needs and starts it. It runs before
// the factory starts, so the controller waits for its caches in its own goroutine.
type controllerStart func(ctx context.Context, c *ControllerContext) error

// controller is one entry of --controllers.
type controller struct {
	name  string
	start controllerStart
}

// controllers are the controllers miniapi runs, by kube-controller-manager's names.
var controllers = []controller{
	{"namespace", startNamespace},
	{"garbagecollector", startGarbageCollector},
	{"replicaset", startReplicaSet},
	{"replicationcontroller", startReplicationController},
	{"deployment", startDeployment},
	{"endpointslice", startEndpointSlice},
	{"endpointslicemirroring", startEndpointSliceMirroring},
	{"endpoint", startEndpoints},
	{"serviceaccount", startServiceAccount},
	{"job", startJob},
	{"cronjob", startCronJob},
	{"ttl-after-finished", startTTLAfterFinished},
	{"daemonset", startDaemonSet},
	{"nodelifecycle", startNodeLifecycle},
	{"statefulset", startStatefulSet},
	{"service-lb-controller", startLoadBalancer},
	{"nodeipam", startNodeIPAM},
	{"disruption", startDisruption},
	{"resourcequota", startResourceQuota},
	{"persistentvolume-binder", startPVBinder},
	{localpath.Name, startLocalPath},
	{volumeprotection.PVCName, startPVCProtection},
	{volumeprotection.PVName, startPVProtection},
	{"clusterrole-aggregation", startClusterRoleAggregation},
	{"root-ca-cert-publisher", startRootCACertPublisher},
	{"horizontalpodautoscaling", startHorizontalPodAutoscaler},
	{"csrapproving", startCSRApproving},
	{"csrsigning", startCSRSigning},
	{"csrcleaner", startCSRCleaner},
	{"tokencleaner", startTokenCleaner},
	{"validatingadmissionpolicy-status", startPolicyStatus},
}

// ControllerNames lists every controller --controllers can name.
func ControllerNames() []string {
	names := make([]string, len(controllers))
	for i, c := range controllers {
		names[i] = c.name
	}
	return names
}

// enabledControllers reads --controllers as kube-controller-manager does: "*" turns on
// every controller, "name" turns one on, "-name" turns one off; the last word about a
// name wins over "*". Nothing said means "*".
func enabledControllers(flag []string) (map[string]bool, error) {
	if len(flag) == 0 {
		flag = []string{"*"} // the default, as for kube-controller-manager
	}
	known := ControllerNames()
	all := false
	explicit := map[string]bool{}
	for _, word := range flag {
		word = strings.TrimSpace(word)
		switch {
		case word == "*":
			all = true
		case strings.HasPrefix(word, "-"):
			name := word[1:]
			if !slices.Contains(known, name) {
				return nil, fmt.Errorf("--controllers: unknown controller %q; known: %s", name, strings.Join(known, ", "))
			}
			explicit[name] = false
		default:
			if !slices.Contains(known, word) {
				return nil, fmt.Errorf("--controllers: unknown controller %q; known: %s", word, strings.Join(known, ", "))
			}
			explicit[word] = true
		}
	}
	enabled := map[string]bool{}
	for _, name := range known {
		on, said := explicit[name]
		enabled[name] = (all && !said) || on
	}
	return enabled, nil
}

// startControllers starts the controllers --controllers turns on.
func startControllers(ctx context.Context, c *ControllerContext, enabled map[string]bool) error {
	for _, ctrl := range controllers {
		if ctx.Err() != nil {
			return nil // leadership lost or shutting down: a controller made now would never run
		}
		if !enabled[ctrl.name] {
			c.Log.Info("controller disabled", "controller", ctrl.name)
			continue
		}
		if err := ctrl.start(ctx, c); err != nil {
			return fmt.Errorf("start %s controller: %w", ctrl.name, err)
		}
	}
	return nil
}

func startNamespace(ctx context.Context, c *ControllerContext) error {
	ns, err := namespace.New(c.Client, c.Metadata, c.Informers.Core().V1().Namespaces(), c.Log.With("component", "namespace-controller"))
	if err != nil {
		return err
	}
	c.goRun(func() { ns.Run(ctx) })
	return nil
}

func startGarbageCollector(ctx context.Context, c *ControllerContext) error {
	gc := garbagecollector.New(c.Metadata, c.Client.Discovery(), map[schema.GroupVersionResource]cache.SharedIndexInformer{
		corev1.SchemeGroupVersion.WithResource("pods"):       c.Informers.Core().V1().Pods().Informer(),
		corev1.SchemeGroupVersion.WithResource("namespaces"): c.Informers.Core().V1().Namespaces().Informer(),
	}, c.Log.With("component", "garbage-collector"))
	c.goRun(func() {
		if err := gc.Run(ctx); err != nil {
			c.Log.Error("garbage collector stopped", "err", err)
		}
	})
	return nil
}

func startReplicaSet(ctx context.Context, c *ControllerContext) error {
	rs, err := replicaset.NewReplicaSet(c.Client, c.Informers.Apps().V1().ReplicaSets(), c.Informers.Core().V1().Pods(),
		c.Recorder("replicaset-controller"), c.Log.With("component", "replicaset-controller"))
	if err != nil {
		return err
	}
	c.goRun(func() { rs.Run(ctx) })
	return nil
}

func startReplicationController(ctx context.Context, c *ControllerContext) error {
	rc, err := replicaset.NewReplicationController(c.Client, c.Informers.Core().V1().ReplicationControllers(), c.Informers.Core().V1().Pods(),
		c.Recorder("replication-controller"), c.Log.With("component", "replication-controller"))
	if err != nil {
		return err
	}
	c.goRun(func() { rc.Run(ctx) })
	return nil
}

func startDeployment(ctx context.Context, c *ControllerContext) error {
	d, err := deployment.New(c.Client, c.Informers.Apps().V1().Deployments(), c.Informers.Apps().V1().ReplicaSets(),
		c.Informers.Core().V1().Pods(), c.Recorder("deployment-controller"), c.Log.With("component", "deployment-controller"))
	if err != nil {
		return err
	}
	c.goRun(func() { d.Run(ctx) })
	return nil
}

func startEndpointSlice(ctx context.Context, c *ControllerContext) error {
	core := c.Informers.Core().V1()
	es, err := endpointslice.New(c.Client, core.Services(), core.Pods(), core.Nodes(), c.Informers.Discovery().V1().EndpointSlices(),
		c.Log.With("component", "endpointslice-controller"))
	if err != nil {
		return err
	}
	c.goRun(func() { es.Run(ctx) })
	return nil
}

func startEndpointSliceMirroring(ctx context.Context, c *ControllerContext) error {
	core := c.Informers.Core().V1()
	m, err := endpointslicemirroring.New(c.Client, core.Endpoints(), core.Services(), c.Informers.Discovery().V1().EndpointSlices(),
		c.Recorder(endpointslicemirroring.Name), c.Log.With("component", endpointslicemirroring.Name))
	if err != nil {
		return err
	}
	c.goRun(func() { m.Run(ctx) })
	return nil
}

func startEndpoints(ctx context.Context, c *ControllerContext) error {
	core := c.Informers.Core().V1()
	ep, err := endpoints.New(c.Client, core.Services(), core.Pods(), core.Endpoints(), c.Log.With("component", "endpoint-controller"))
	if err != nil {
		return err
	}
	c.goRun(func() { ep.Run(ctx) })
	return nil
}

func startServiceAccount(ctx context.Context, c *ControllerContext) error {
	sa, err := serviceaccount.New(c.Client, c.Informers.Core().V1().Namespaces(), c.Informers.Core().V1().ServiceAccounts(),
		c.Log.With("component", "serviceaccount-controller"))
	if err != nil {
		return err
	}
	c.goRun(func() { sa.Run(ctx) })
	return nil
}

func startClusterRoleAggregation(ctx context.Context, c *ControllerContext) error {
	agg, err := clusterroleaggregation.New(c.Client, c.Informers.Rbac().V1().ClusterRoles(), c.Log.With("component", "clusterrole-aggregation-controller"))
	if err != nil {
		return err
	}
	c.goRun(func() { agg.Run(ctx) })
	return nil
}

// startPolicyStatus type-checks ValidatingAdmissionPolicies with the schemas
// kube-controller-manager gives its type checker: the built-in kinds' generated OpenAPI
// definitions, then what discovery and /openapi/v3 serve (custom resources).
func startPolicyStatus(ctx context.Context, c *ControllerContext) error {
	schemas := resolver.NewDefinitionsSchemaResolver(openapi.GetOpenAPIDefinitions, scheme.Scheme, apiextensionsscheme.Scheme).
		Combine(&resolver.ClientDiscoveryResolver{Discovery: c.Client.Discovery()})
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client.Discovery()))
	ps, err := policystatus.New(c.Client, c.Informers.Admissionregistration().V1().ValidatingAdmissionPolicies(),
		&validating.TypeChecker{SchemaResolver: schemas, RestMapper: mapper}, c.Log.With("component", "validatingadmissionpolicy-status-controller"))
	if err != nil {
		return err
	}
	c.goRun(func() { ps.Run(ctx) })
	return nil
}

func startRootCACertPublisher(ctx context.Context, c *ControllerContext) error {
	if len(c.RootCA) == 0 {
		return errors.New("root-ca-cert-publisher: no CA to publish")
	}
	pub, err := rootcacertpublisher.New(c.Client, c.RootCA, c.Informers.Core().V1().Namespaces(), c.Informers.Core().V1().ConfigMaps(),
		c.Log.With("component", "root-ca-cert-publisher"))
	if err != nil {
		return err
	}
	c.goRun(func() { pub.Run(ctx) })
	return nil
}

func startDaemonSet(ctx context.Context, c *ControllerContext) error {
	apps := c.Informers.Apps().V1()
	ds, err := daemonset.New(c.Client, apps.DaemonSets(), c.Informers.Core().V1().Pods(), c.Informers.Core().V1().Nodes(),
		apps.ControllerRevisions(), c.Recorder("daemonset-controller"), c.Log.With("component", "daemonset-controller"))
	if err != nil {
		return err
	}
	c.goRun(func() { ds.Run(ctx) })
	return nil
}

func startJob(ctx context.Context, c *ControllerContext) error {
	jc, err := job.New(c.Client, c.Informers.Batch().V1().Jobs(), c.Informers.Core().V1().Pods(), c.Recorder(job.Name), clock.RealClock{}, c.Log.With("component", job.Name))
	if err != nil {
		return err
	}
	c.goRun(func() { jc.Run(ctx) })
	return nil
}

func startCronJob(ctx context.Context, c *ControllerContext) error {
	batch := c.Informers.Batch().V1()
	cc, err := cronjob.New(c.Client, batch.CronJobs(), batch.Jobs(), c.Recorder(cronjob.Name), clock.RealClock{}, c.Log.With("component", cronjob.Name))
	if err != nil {
		return err
	}
	c.goRun(func() { cc.Run(ctx) })
	return nil
}

func startTTLAfterFinished(ctx context.Context, c *ControllerContext) error {
	tc, err := ttlafterfinished.New(c.Client, c.Informers.Batch().V1().Jobs(), clock.RealClock{}, c.Log.With("component", ttlafterfinished.Name))
	if err != nil {
		return err
	}
	c.goRun(func() { tc.Run(ctx) })
	return nil
}

func startDisruption(ctx context.Context, c *ControllerContext) error {
	dc, err := disruption.New(c.Client, c.Informers, c.Recorder(disruption.Name), clock.RealClock{}, c.Log.With("component", disruption.Name))
	if err != nil {
		return err
	}
	c.goRun(func() { dc.Run(ctx) })
	return nil
}

func startResourceQuota(ctx context.Context, c *ControllerContext) error {
	rq, err := resourcequota.New(c.Client, c.Informers, c.Log.With("component", resourcequota.Name))
	if err != nil {
		return err
	}
	c.goRun(func() { rq.Run(ctx) })
	return nil
}

func startPVBinder(ctx context.Context, c *ControllerContext) error {
	core := c.Informers.Core().V1()
	pb, err := pvbinder.New(c.Client, core.PersistentVolumes(), core.PersistentVolumeClaims(), core.Nodes(),
		c.Informers.Storage().V1().StorageClasses(), c.Recorder(pvbinder.Name), c.Log.With("component", pvbinder.Name))
	if err != nil {
		return err
	}
	c.goRun(func() { pb.Run(ctx) })
	return nil
}

func startPVCProtection(ctx context.Context, c *ControllerContext) error {
	core := c.Informers.Core().V1()
	p, err := volumeprotection.NewClaims(c.Client, core.PersistentVolumeClaims(), core.Pods(), c.Log.With("component", volumeprotection.PVCName))
	if err != nil {
		return err
	}
	c.goRun(func() { p.Run(ctx) })
	return nil
}

func startPVProtection(ctx context.Context, c *ControllerContext) error {
	p, err := volumeprotection.NewVolumes(c.Client, c.Informers.Core().V1().PersistentVolumes(), c.Log.With("component", volumeprotection.PVName))
	if err != nil {
		return err
	}
	c.goRun(func() { p.Run(ctx) })
	return nil
}

func startLocalPath(ctx context.Context, c *ControllerContext) error {
	core := c.Informers.Core().V1()
	lp, err := localpath.New(c.Client, core.PersistentVolumes(), core.PersistentVolumeClaims(), core.Nodes(),
		c.Informers.Storage().V1().StorageClasses(), c.Recorder(localpath.Name), c.Log.With("component", localpath.Name))
	if err != nil {
		return err
	}
	c.goRun(func() { lp.Run(ctx) })
	return nil
}

func startNodeLifecycle(ctx context.Context, c *ControllerContext) error {
	opts := nodelifecycle.Options{
		MonitorPeriod: cmp.Or(c.Options.NodeMonitorPeriod, nodelifecycle.DefaultMonitorPeriod),
		GracePeriod:   cmp.Or(c.Options.NodeMonitorGracePeriod, nodelifecycle.DefaultGracePeriod),
	}
	nl := nodelifecycle.New(c.Client, c.Informers, c.Recorder("node-controller"), c.Recorder("taint-eviction-controller"), opts, c.Log.With("component", "node-lifecycle-controller"))
	c.goRun(func() { nl.Run(ctx) })
	return nil
}

func startStatefulSet(ctx context.Context, c *ControllerContext) error {
	apps := c.Informers.Apps().V1()
	ss, err := statefulset.New(c.Client, apps.StatefulSets(), c.Informers.Core().V1().Pods(), apps.ControllerRevisions(),
		c.Recorder("statefulset-controller"), c.Log.With("component", "statefulset-controller"))
	if err != nil {
		return err
	}
	c.goRun(func() { ss.Run(ctx) })
	return nil
}

func startLoadBalancer(ctx context.Context, c *ControllerContext) error {
	var pool loadbalancer.Pool
	if c.Options.LoadBalancerIPPool != "" {
		var err error
		if pool, err = loadbalancer.ParsePool(c.Options.LoadBalancerIPPool); err != nil {
			return err
		}
	}
	lb, err := loadbalancer.New(c.Client, c.Informers.Core().V1().Services(), pool, c.Recorder("service-controller"),
		c.Log.With("component", "service-lb-controller"))
	if err != nil {
		return err
	}
	c.goRun(func() { lb.Run(ctx) })
	return nil
}

func startNodeIPAM(ctx context.Context, c *ControllerContext) error {
	ranges, err := c.Options.nodeRanges()
	if err != nil {
		return err
	}
	ipam, err := nodeipam.New(c.Client, c.Informers.Core().V1().Nodes(), ranges, c.Recorder("node-controller"), c.Log.With("component", "nodeipam"))
	if err != nil {
		return err
	}
	c.goRun(func() { ipam.Run(ctx) })
	return nil
}

// HPAOptions are kube-controller-manager's --horizontal-pod-autoscaler-* flags.
type HPAOptions struct {
	SyncPeriod             time.Duration
	DownscaleStabilization time.Duration
	Tolerance              float64
}

func startHorizontalPodAutoscaler(ctx context.Context, c *ControllerContext) error {
	opts, h := podautoscaler.DefaultOptions(), c.Options.HPA
	opts.SyncPeriod = cmp.Or(h.SyncPeriod, opts.SyncPeriod)
	opts.DownscaleStabilization = cmp.Or(h.DownscaleStabilization, opts.DownscaleStabilization)
	opts.Tolerance = cmp.Or(h.Tolerance, opts.Tolerance)
	// Targets are found through discovery, as kube-controller-manager finds them: any kind
	// with a scale subresource, custom resources included.
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client.Discovery()))
	scales, err := scale.NewForConfig(c.Config, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(c.Client.Discovery()))
	if err != nil {
		return err
	}
	metrics, err := metricsclient.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	hc, err := podautoscaler.New(c.Client, scales, mapper, podautoscaler.ResourceMetrics{Client: metrics},
		c.Informers.Autoscaling().V2().HorizontalPodAutoscalers(), c.Informers.Core().V1().Pods(),
		c.Recorder(podautoscaler.Name), clock.RealClock{}, opts, c.Log.With("component", podautoscaler.Name))
	if err != nil {
		return err
	}
	c.goRun(func() { hc.Run(ctx) })
	return nil
}

func startCSRApproving(ctx context.Context, c *ControllerContext) error {
	ac, err := csrapproving.New(c.Client, c.Informers.Certificates().V1().CertificateSigningRequests(), c.Log.With("component", csrapproving.Name))
	if err != nil {
		return err
	}
	c.goRun(func() { ac.Run(ctx) })
	return nil
}

func startCSRSigning(ctx context.Context, c *ControllerContext) error {
	d := c.Options.ClusterSigningDuration
	if d == 0 {
		d = csrsigning.DefaultDuration
	}
	sc, err := csrsigning.New(c.Client, c.Informers.Certificates().V1().CertificateSigningRequests(), c.CA, d, c.Log.With("component", csrsigning.Name))
	if err != nil {
		return err
	}
	c.goRun(func() { sc.Run(ctx) })
	return nil
}

func startCSRCleaner(ctx context.Context, c *ControllerContext) error {
	cleaner := csrcleaner.New(c.Client, c.Informers.Certificates().V1().CertificateSigningRequests(), c.Log.With("component", csrcleaner.Name))
	c.goRun(func() { cleaner.Run(ctx) })
	return nil
}

// startTokenCleaner deletes expired bootstrap tokens. kube-controller-manager leaves it
// off unless --controllers names it; kubeadm, whose bootstrap tokens miniapi serves,
// always turns it on, and so does miniapi's default.
func startTokenCleaner(ctx context.Context, c *ControllerContext) error {
	tc, err := tokencleaner.New(c.Client, c.Log.With("component", tokencleaner.Name))
	if err != nil {
		return err
	}
	c.goRun(func() { tc.Run(ctx) })
	return nil
}
