package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
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
	"github.com/minik8s/minik8s/pkg/control/controllers/ephemeral"
	"github.com/minik8s/minik8s/pkg/control/controllers/flowschemastatus"
	"github.com/minik8s/minik8s/pkg/control/controllers/garbagecollector"
	"github.com/minik8s/minik8s/pkg/control/controllers/job"
	"github.com/minik8s/minik8s/pkg/control/controllers/loadbalancer"
	"github.com/minik8s/minik8s/pkg/control/controllers/localpath"
	"github.com/minik8s/minik8s/pkg/control/controllers/namespace"
	"github.com/minik8s/minik8s/pkg/control/controllers/nodeipam"
	"github.com/minik8s/minik8s/pkg/control/controllers/nodelifecycle"
	"github.com/minik8s/minik8s/pkg/control/controllers/nodettl"
	"github.com/minik8s/minik8s/pkg/control/controllers/podautoscaler"
	"github.com/minik8s/minik8s/pkg/control/controllers/podgc"
	"github.com/minik8s/minik8s/pkg/control/controllers/policystatus"
	"github.com/minik8s/minik8s/pkg/control/controllers/pvbinder"
	"github.com/minik8s/minik8s/pkg/control/controllers/replicaset"
	"github.com/minik8s/minik8s/pkg/control/controllers/resourceclaim"
	"github.com/minik8s/minik8s/pkg/control/controllers/resourcequota"
	"github.com/minik8s/minik8s/pkg/control/controllers/rootcacertpublisher"
	"github.com/minik8s/minik8s/pkg/control/controllers/serviceaccount"
	"github.com/minik8s/minik8s/pkg/control/controllers/serviceaccounttoken"
	"github.com/minik8s/minik8s/pkg/control/controllers/servicecidrs"
	"github.com/minik8s/minik8s/pkg/control/controllers/statefulset"
	"github.com/minik8s/minik8s/pkg/control/controllers/tokencleaner"
	"github.com/minik8s/minik8s/pkg/control/controllers/ttlafterfinished"
	"github.com/minik8s/minik8s/pkg/control/controllers/volumeprotection"
	"github.com/minik8s/minik8s/pkg/control/openapi"
	"github.com/minik8s/minik8s/pkg/pki"
	corev1 "k8s.io/api/core/v1"
	apiextensionsscheme "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/scheme"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
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
	// Mapper maps kinds to resources from discovery, read again every 30 s, for the
	// controllers that meet kinds in references (scale targets, owners, policies' types).
	Mapper meta.ResettableRESTMapper
	// Scales reads any kind's scale subresource, custom resources' too.
	Scales  scale.ScalesGetter
	Options Options
	Log     *slog.Logger
	// RootCA is the cluster CA's PEM, published in every namespace for pods.
	RootCA []byte
	// CA signs approved certificate requests (csrsigning).
	CA *pki.CA
	// LegacyTokens signs the tokens of kubernetes.io/service-account-token Secrets, with the
	// API server's service account key (--service-account-private-key-file's).
	LegacyTokens serviceaccounttoken.Issuer

	broadcaster record.EventBroadcaster
	// running counts the goroutines the controllers run on, so miniapi's Run returns only
	// after every one of them has.
	running *sync.WaitGroup
}

// runner is a controller made and ready to work until ctx ends.
type runner interface{ Run(ctx context.Context) }

// runFunc is a runner made of a function.
type runFunc func(ctx context.Context)

// Run calls f.
func (f runFunc) Run(ctx context.Context) { f(ctx) }

// Recorder emits Events with component as their source, as kube-controller-manager's
// controllers do (source "deployment-controller", "replicaset-controller", ...).
func (c *ControllerContext) Recorder(component string) record.EventRecorder {
	return c.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
}

// controllerStart asks for the informers a controller needs and makes the controller, which
// startControllers runs. It runs before the factory starts, so the controller waits for its
// caches in its own goroutine.
type controllerStart func(c *ControllerContext) (runner, error)

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
	{"serviceaccount-token", startServiceAccountToken},
	{"job", startJob},
	{"cronjob", startCronJob},
	{"ttl-after-finished", startTTLAfterFinished},
	{"daemonset", startDaemonSet},
	{"nodelifecycle", startNodeLifecycle},
	{nodettl.Name, startNodeTTL},
	{podgc.Name, startPodGC},
	{"statefulset", startStatefulSet},
	{"service-lb-controller", startLoadBalancer},
	{"nodeipam", startNodeIPAM},
	{"disruption", startDisruption},
	{"resourcequota", startResourceQuota},
	{"persistentvolume-binder", startPVBinder},
	{localpath.Name, startLocalPath},
	{volumeprotection.PVCName, startPVCProtection},
	{volumeprotection.PVName, startPVProtection},
	{ephemeral.Name, startEphemeralVolume},
	{resourceclaim.Name, startResourceClaim},
	{"clusterrole-aggregation", startClusterRoleAggregation},
	{"root-ca-cert-publisher", startRootCACertPublisher},
	{"horizontalpodautoscaling", startHorizontalPodAutoscaler},
	{"csrapproving", startCSRApproving},
	{"csrsigning", startCSRSigning},
	{"csrcleaner", startCSRCleaner},
	{"tokencleaner", startTokenCleaner},
	{"validatingadmissionpolicy-status", startPolicyStatus},
	{"flowschema-status", startFlowSchemaStatus},
	{servicecidrs.Name, startServiceCIDRs},
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
		r, err := ctrl.start(c)
		if err != nil && ctx.Err() != nil {
			// Shutting down: the informers stopped under the start, so its handlers could not
			// be added. A controller made anyway runs on the ended ctx, which only shuts its
			// queue down, so no goroutine of it outlives miniapi's Run.
			if made(r) {
				c.running.Go(func() { r.Run(ctx) })
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("start %s controller: %w", ctrl.name, err)
		}
		// On a goroutine that miniapi's Run waits for.
		c.running.Go(func() { r.Run(ctx) })
	}
	return nil
}

// made: a start that failed returned its controller all the same (a New that failed after
// making its queue returns it with the error), not nil nor a nil pointer in the interface.
func made(r runner) bool {
	if r == nil {
		return false
	}
	v := reflect.ValueOf(r)
	switch v.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Interface, reflect.Map, reflect.Slice, reflect.Chan:
		return !v.IsNil()
	}
	return true
}

func startNamespace(c *ControllerContext) (runner, error) {
	return namespace.New(c.Client, c.Metadata, c.Informers.Core().V1().Namespaces(), c.Log.With("component", "namespace-controller"))
}

func startGarbageCollector(c *ControllerContext) (runner, error) {
	gc := garbagecollector.New(c.Metadata, c.Client.Discovery(), map[schema.GroupVersionResource]cache.SharedIndexInformer{
		corev1.SchemeGroupVersion.WithResource("pods"):       c.Informers.Core().V1().Pods().Informer(),
		corev1.SchemeGroupVersion.WithResource("namespaces"): c.Informers.Core().V1().Namespaces().Informer(),
	}, c.Recorder("garbage-collector-controller"), c.Log.With("component", "garbage-collector"))
	return runFunc(func(ctx context.Context) {
		if err := gc.Run(ctx); err != nil {
			c.Log.Error("garbage collector stopped", "err", err)
		}
	}), nil
}

func startReplicaSet(c *ControllerContext) (runner, error) {
	return replicaset.NewReplicaSet(c.Client, c.Informers.Apps().V1().ReplicaSets(), c.Informers.Core().V1().Pods(),
		c.Recorder("replicaset-controller"), c.Log.With("component", "replicaset-controller"))
}

func startReplicationController(c *ControllerContext) (runner, error) {
	return replicaset.NewReplicationController(c.Client, c.Informers.Core().V1().ReplicationControllers(), c.Informers.Core().V1().Pods(),
		c.Recorder("replication-controller"), c.Log.With("component", "replication-controller"))
}

func startDeployment(c *ControllerContext) (runner, error) {
	return deployment.New(c.Client, c.Informers.Apps().V1().Deployments(), c.Informers.Apps().V1().ReplicaSets(),
		c.Informers.Core().V1().Pods(), c.Recorder("deployment-controller"), c.Log.With("component", "deployment-controller"))
}

func startEndpointSlice(c *ControllerContext) (runner, error) {
	core := c.Informers.Core().V1()
	return endpointslice.New(c.Client, core.Services(), core.Pods(), core.Nodes(), c.Informers.Discovery().V1().EndpointSlices(), c.Recorder(endpointslice.Name),
		c.Log.With("component", "endpointslice-controller"))
}

func startEndpointSliceMirroring(c *ControllerContext) (runner, error) {
	core := c.Informers.Core().V1()
	return endpointslicemirroring.New(c.Client, core.Endpoints(), core.Services(), c.Informers.Discovery().V1().EndpointSlices(),
		c.Recorder(endpointslicemirroring.Name), c.Log.With("component", endpointslicemirroring.Name))
}

func startEndpoints(c *ControllerContext) (runner, error) {
	core := c.Informers.Core().V1()
	return endpoints.New(c.Client, core.Services(), core.Pods(), core.Endpoints(), c.Log.With("component", "endpoint-controller"))
}

func startServiceAccount(c *ControllerContext) (runner, error) {
	return serviceaccount.New(c.Client, c.Informers.Core().V1().Namespaces(), c.Informers.Core().V1().ServiceAccounts(),
		c.Log.With("component", "serviceaccount-controller"))
}

func startServiceAccountToken(c *ControllerContext) (runner, error) {
	if c.LegacyTokens == nil {
		return nil, errors.New("serviceaccount-token: no service account signing key")
	}
	return serviceaccounttoken.New(c.Client, c.Informers.Core().V1().ServiceAccounts(), c.LegacyTokens, c.RootCA,
		c.Log.With("component", serviceaccounttoken.Name))
}

// startFlowSchemaStatus keeps the FlowSchemas' Dangling condition, the work of
// kube-apiserver's API Priority and Fairness config consumer.
func startFlowSchemaStatus(c *ControllerContext) (runner, error) {
	fc := c.Informers.Flowcontrol().V1()
	return flowschemastatus.New(c.Client, fc.FlowSchemas(), fc.PriorityLevelConfigurations(), c.Log.With("component", "flowschema-status-controller"))
}

func startClusterRoleAggregation(c *ControllerContext) (runner, error) {
	return clusterroleaggregation.New(c.Client, c.Informers.Rbac().V1().ClusterRoles(), c.Log.With("component", "clusterrole-aggregation-controller"))
}

// startPolicyStatus type-checks ValidatingAdmissionPolicies with the schemas
// kube-controller-manager gives its type checker: the built-in kinds' generated OpenAPI
// definitions, then what discovery and /openapi/v3 serve (custom resources).
func startPolicyStatus(c *ControllerContext) (runner, error) {
	schemas := resolver.NewDefinitionsSchemaResolver(openapi.GetOpenAPIDefinitions, scheme.Scheme, apiextensionsscheme.Scheme).
		Combine(&resolver.ClientDiscoveryResolver{Discovery: c.Client.Discovery()})
	return policystatus.New(c.Client, c.Informers.Admissionregistration().V1().ValidatingAdmissionPolicies(),
		&validating.TypeChecker{SchemaResolver: schemas, RestMapper: c.Mapper}, c.Log.With("component", "validatingadmissionpolicy-status-controller"))
}

func startRootCACertPublisher(c *ControllerContext) (runner, error) {
	if len(c.RootCA) == 0 {
		return nil, errors.New("root-ca-cert-publisher: no CA to publish")
	}
	return rootcacertpublisher.New(c.Client, c.RootCA, c.Informers.Core().V1().Namespaces(), c.Informers.Core().V1().ConfigMaps(),
		c.Log.With("component", "root-ca-cert-publisher"))
}

func startDaemonSet(c *ControllerContext) (runner, error) {
	apps := c.Informers.Apps().V1()
	return daemonset.New(c.Client, apps.DaemonSets(), c.Informers.Core().V1().Pods(), c.Informers.Core().V1().Nodes(),
		apps.ControllerRevisions(), c.Recorder("daemonset-controller"), c.Log.With("component", "daemonset-controller"))
}

func startJob(c *ControllerContext) (runner, error) {
	return job.New(c.Client, c.Informers.Batch().V1().Jobs(), c.Informers.Core().V1().Pods(), c.Recorder(job.Name), clock.RealClock{}, c.Log.With("component", job.Name))
}

func startCronJob(c *ControllerContext) (runner, error) {
	batch := c.Informers.Batch().V1()
	return cronjob.New(c.Client, batch.CronJobs(), batch.Jobs(), c.Recorder(cronjob.Name), clock.RealClock{}, c.Log.With("component", cronjob.Name))
}

func startTTLAfterFinished(c *ControllerContext) (runner, error) {
	return ttlafterfinished.New(c.Client, c.Informers.Batch().V1().Jobs(), clock.RealClock{}, c.Log.With("component", ttlafterfinished.Name))
}

func startNodeTTL(c *ControllerContext) (runner, error) {
	return nodettl.New(c.Client, c.Informers.Core().V1().Nodes(), c.Log.With("component", "ttl-controller"))
}

func startPodGC(c *ControllerContext) (runner, error) {
	return podgc.New(c.Client, c.Informers.Core().V1().Pods(), c.Informers.Core().V1().Nodes(), c.Options.TerminatedPodGCThreshold, clock.RealClock{}, c.Log.With("component", podgc.Name)), nil
}

func startDisruption(c *ControllerContext) (runner, error) {
	return disruption.New(c.Client, c.Informers, c.Mapper, c.Scales, c.Recorder(disruption.EventSource), clock.RealClock{}, c.Log.With("component", disruption.Name))
}

func startResourceQuota(c *ControllerContext) (runner, error) {
	return resourcequota.New(c.Client, c.Metadata, c.Mapper, c.Informers, c.Log.With("component", resourcequota.Name))
}

func startPVBinder(c *ControllerContext) (runner, error) {
	core := c.Informers.Core().V1()
	return pvbinder.New(c.Client, core.PersistentVolumes(), core.PersistentVolumeClaims(), core.Nodes(),
		c.Informers.Storage().V1().StorageClasses(), c.Recorder(pvbinder.Name), c.Log.With("component", pvbinder.Name))
}

func startPVCProtection(c *ControllerContext) (runner, error) {
	core := c.Informers.Core().V1()
	return volumeprotection.NewClaims(c.Client, core.PersistentVolumeClaims(), core.Pods(), c.Log.With("component", volumeprotection.PVCName))
}

func startEphemeralVolume(c *ControllerContext) (runner, error) {
	core := c.Informers.Core().V1()
	return ephemeral.New(c.Client, core.Pods(), core.PersistentVolumeClaims(), c.Recorder(ephemeral.EventSource), c.Log.With("component", ephemeral.Name))
}

func startPVProtection(c *ControllerContext) (runner, error) {
	return volumeprotection.NewVolumes(c.Client, c.Informers.Core().V1().PersistentVolumes(), c.Log.With("component", volumeprotection.PVName))
}

func startLocalPath(c *ControllerContext) (runner, error) {
	core := c.Informers.Core().V1()
	return localpath.New(c.Client, core.PersistentVolumes(), core.PersistentVolumeClaims(), core.Nodes(),
		c.Informers.Storage().V1().StorageClasses(), c.Recorder(localpath.Name), c.Log.With("component", localpath.Name))
}

func startNodeLifecycle(c *ControllerContext) (runner, error) {
	opts := nodelifecycle.Options{
		MonitorPeriod: cmp.Or(c.Options.NodeMonitorPeriod, nodelifecycle.DefaultMonitorPeriod),
		GracePeriod:   cmp.Or(c.Options.NodeMonitorGracePeriod, nodelifecycle.DefaultGracePeriod),
	}
	return nodelifecycle.New(c.Client, c.Informers, c.Recorder("node-controller"), c.Recorder("taint-eviction-controller"), opts, c.Log.With("component", "node-lifecycle-controller"))
}

func startStatefulSet(c *ControllerContext) (runner, error) {
	apps := c.Informers.Apps().V1()
	return statefulset.New(c.Client, apps.StatefulSets(), c.Informers.Core().V1().Pods(), apps.ControllerRevisions(),
		c.Informers.Core().V1().PersistentVolumeClaims(), c.Recorder("statefulset-controller"), c.Log.With("component", "statefulset-controller"))
}

func startLoadBalancer(c *ControllerContext) (runner, error) {
	var pool loadbalancer.Pool
	if c.Options.LoadBalancerIPPool != "" {
		var err error
		if pool, err = loadbalancer.ParsePool(c.Options.LoadBalancerIPPool); err != nil {
			return nil, err
		}
	}
	return loadbalancer.New(c.Client, c.Informers.Core().V1().Services(), pool, c.Recorder("service-controller"),
		c.Log.With("component", "service-lb-controller"))
}

func startNodeIPAM(c *ControllerContext) (runner, error) {
	ranges, err := c.Options.nodeRanges()
	if err != nil {
		return nil, err
	}
	return nodeipam.New(c.Client, c.Informers.Core().V1().Nodes(), ranges, c.Recorder(nodeipam.EventSource), c.Log.With("component", "nodeipam"))
}

// HPAOptions are kube-controller-manager's --horizontal-pod-autoscaler-* flags.
type HPAOptions struct {
	SyncPeriod             time.Duration
	DownscaleStabilization time.Duration
	Tolerance              float64
}

func startHorizontalPodAutoscaler(c *ControllerContext) (runner, error) {
	opts, h := podautoscaler.DefaultOptions(), c.Options.HPA
	opts.SyncPeriod = cmp.Or(h.SyncPeriod, opts.SyncPeriod)
	opts.DownscaleStabilization = cmp.Or(h.DownscaleStabilization, opts.DownscaleStabilization)
	opts.Tolerance = cmp.Or(h.Tolerance, opts.Tolerance)
	// Targets are found through discovery, as kube-controller-manager finds them: any kind
	// with a scale subresource, custom resources included.
	metrics, err := metricsclient.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	return podautoscaler.New(c.Client, c.Scales, c.Mapper, podautoscaler.ResourceMetrics{Client: metrics},
		c.Informers.Autoscaling().V2().HorizontalPodAutoscalers(), c.Informers.Core().V1().Pods(),
		c.Recorder(podautoscaler.Name), clock.RealClock{}, opts, c.Log.With("component", podautoscaler.Name))
}

func startCSRApproving(c *ControllerContext) (runner, error) {
	return csrapproving.New(c.Client, c.Informers.Certificates().V1().CertificateSigningRequests(), c.Log.With("component", csrapproving.Name))
}

func startCSRSigning(c *ControllerContext) (runner, error) {
	d := c.Options.ClusterSigningDuration
	if d == 0 {
		d = csrsigning.DefaultDuration
	}
	return csrsigning.New(c.Client, c.Informers.Certificates().V1().CertificateSigningRequests(), c.CA, d, c.Log.With("component", csrsigning.Name))
}

func startCSRCleaner(c *ControllerContext) (runner, error) {
	cleaner := csrcleaner.New(c.Client, c.Informers.Certificates().V1().CertificateSigningRequests(), c.Log.With("component", csrcleaner.Name))
	return cleaner, nil
}

// startTokenCleaner deletes expired bootstrap tokens. kube-controller-manager leaves it
// off unless --controllers names it; kubeadm, whose bootstrap tokens miniapi serves,
// always turns it on, and so does miniapi's default.
func startServiceCIDRs(c *ControllerContext) (runner, error) {
	networking := c.Informers.Networking().V1()
	return servicecidrs.New(c.Client, networking.ServiceCIDRs(), networking.IPAddresses(), c.Log.With("component", servicecidrs.Name))
}

func startResourceClaim(c *ControllerContext) (runner, error) {
	dra := c.Informers.Resource().V1()
	return resourceclaim.New(c.Client, c.Informers.Core().V1().Pods(), dra.ResourceClaims(), dra.ResourceClaimTemplates(),
		c.Recorder("resource_claim"), c.Log.With("component", resourceclaim.Name))
}

func startTokenCleaner(c *ControllerContext) (runner, error) {
	return tokencleaner.New(c.Client, c.Log.With("component", tokencleaner.Name))
}
