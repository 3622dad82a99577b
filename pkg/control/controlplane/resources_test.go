package controlplane

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// everyKind holds one object of each kind issue 3 asks for, as a user would write it.
var everyKind = `
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: manual}
subsets: [{addresses: [{ip: 10.244.1.5}], ports: [{port: 8080}]}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: manual-1, labels: {kubernetes.io/service-name: manual}}
addressType: IPv4
endpoints: [{addresses: [10.244.1.5]}]
ports: [{port: 8080}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: fast}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: s3cret}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: robot}
---
apiVersion: v1
kind: Event
metadata: {name: web.1}
involvedObject: {kind: Pod, name: web, namespace: default}
reason: Testing
message: hello
type: Normal
---
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: web.2}
eventTime: "2025-01-01T00:00:00.000000Z"
reportingController: tester
reportingInstance: here
action: Test
reason: Testing
regarding: {kind: Pod, name: web, namespace: default}
note: hello
type: Normal
---
apiVersion: v1
kind: LimitRange
metadata: {name: limits}
spec:
  limits: [{type: Container, max: {cpu: "2"}}]
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: quota}
spec: {hard: {pods: "10"}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-1}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/pv-1}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
` + workloads + `---
apiVersion: apps/v1
kind: ControllerRevision
metadata: {name: db-1}
revision: 1
data: {spec: {template: {}}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: localhost/minik8s/busybox:v1, command: ["true"]}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: c, image: localhost/minik8s/busybox:v1}]
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader}
rules: [{apiGroups: [""], resources: [pods], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: read}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: watcher}
rules: [{apiGroups: [""], resources: [nodes], verbs: [watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: watch}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: watcher}
subjects: [{kind: Group, apiGroup: rbac.authorization.k8s.io, name: ops}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
`

// workloads are one of each workload kind, all with a pod template labelled app=<name>.
var workloads = workload("v1", "ReplicationController", "legacy", "busybox", "replicas: 1") +
	workload("apps/v1", "Deployment", "web", "netexec", "replicas: 2", "selector: {matchLabels: {app: web}}") +
	workload("apps/v1", "ReplicaSet", "front", "netexec", "selector: {matchLabels: {app: front}}") +
	workload("apps/v1", "StatefulSet", "db", "busybox", "serviceName: db", "selector: {matchLabels: {app: db}}") +
	workload("apps/v1", "DaemonSet", "agent", "busybox", "selector: {matchLabels: {app: agent}}")

// workload is the manifest of a workload whose pod runs one container of a minik8s image;
// specLines are the lines of its spec before the pod template.
func workload(apiVersion, kind, name, image string, specLines ...string) string {
	var spec strings.Builder
	for _, l := range specLines {
		spec.WriteString("  " + l + "\n")
	}
	return fmt.Sprintf(`---
apiVersion: %s
kind: %s
metadata: {name: %s}
spec:
%s  template:
    metadata: {labels: {app: %[3]s}}
    spec: {containers: [{name: c, image: localhost/minik8s/%[5]s:v1}]}
`, apiVersion, kind, name, spec.String(), image)
}

func TestKubectlServesEveryKind(t *testing.T) {
	// The tables of objects as stored: no workload or endpoint controller changes them.
	c := startClusterWith(t, func(o *Options) { o.Controllers = []string{"namespace", "garbagecollector"} })
	out := c.mustKubectl(t, everyKind, "apply", "-f", "-")
	for _, want := range []string{"service/web created", "endpointslice.discovery.k8s.io/manual-1 created", "secret/creds created",
		"event.events.k8s.io/web.2 created", "persistentvolume/pv-1 created", "deployment.apps/web created",
		"controllerrevision.apps/db-1 created", "cronjob.batch/nightly created", "clusterrolebinding.rbac.authorization.k8s.io/watch created",
		"poddisruptionbudget.policy/web created", "priorityclass.scheduling.k8s.io/high created"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply output lacks %q:\n%s", want, out)
		}
	}

	// Each kind by its short name or plural, with the columns a real cluster shows.
	for _, tc := range []struct{ args, header, row string }{
		{"svc web", `NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE`, `web\s+ClusterIP\s+10\.\d+\.\d+\.\d+\s+<none>\s+80/TCP`},
		{"ep manual", `NAME\s+ENDPOINTS\s+AGE`, `manual\s+10\.244\.1\.5:8080`},
		{"endpointslices manual-1", `NAME\s+ADDRESSTYPE\s+PORTS\s+ENDPOINTS\s+AGE`, `manual-1\s+IPv4\s+8080\s+10\.244\.1\.5`},
		{"cm settings", `NAME\s+DATA\s+AGE`, `settings\s+1\s`},
		{"secret creds", `NAME\s+TYPE\s+DATA\s+AGE`, `creds\s+Opaque\s+1\s`},
		{"sa robot", `NAME\s+AGE`, `robot\s+\d+\w`},
		{"ev", `LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE`, `Normal\s+Testing\s+pod/web\s+hello`},
		{"events.events.k8s.io", `LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE`, `Normal\s+Testing\s+pod/web\s+hello`},
		{"limits limits", `NAME\s+CREATED AT`, `limits\s+\d{4}-`},
		{"quota quota", `NAME\s+REQUEST\s+LIMIT\s+AGE`, `quota\s+`},
		{"pv pv-1", `NAME\s+CAPACITY\s+ACCESS MODES\s+RECLAIM POLICY\s+STATUS\s+CLAIM\s+STORAGECLASS`, `pv-1\s+1Gi\s+RWO\s+Retain\s+Pending`},
		{"pvc data", `NAME\s+STATUS\s+VOLUME\s+CAPACITY\s+ACCESS MODES\s+STORAGECLASS`, `data\s+Pending`},
		{"rc legacy", `NAME\s+DESIRED\s+CURRENT\s+READY\s+AGE`, `legacy\s+1\s+0\s+0\s`},
		{"deploy web", `NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE`, `web\s+0/2\s+0\s+0\s`},
		{"rs front", `NAME\s+DESIRED\s+CURRENT\s+READY\s+AGE`, `front\s+1\s+0\s+0\s`},
		{"sts db", `NAME\s+READY\s+AGE`, `db\s+0/1\s`},
		{"ds agent", `NAME\s+DESIRED\s+CURRENT\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+NODE SELECTOR\s+AGE`, `agent\s+0\s+0\s+0\s+0\s+0\s+<none>`},
		{"controllerrevisions db-1", `NAME\s+CONTROLLER\s+REVISION\s+AGE`, `db-1\s+<none>\s+1\s`},
		{"jobs once", `NAME\s+STATUS\s+COMPLETIONS\s+DURATION\s+AGE`, `once\s+Running\s+0/1\s`},
		{"cj nightly", `NAME\s+SCHEDULE\s+TIMEZONE\s+SUSPEND\s+ACTIVE\s+LAST SCHEDULE\s+AGE`, `nightly\s+0 3 \* \* \*\s+<none>\s+False\s+0\s+<none>`},
		{"pc high", `NAME\s+VALUE\s+GLOBAL-DEFAULT\s+AGE\s+PREEMPTIONPOLICY`, `high\s+1000\s+false\s+\S+\s+PreemptLowerPriority`},
		{"pc system-node-critical", `NAME\s+VALUE`, `system-node-critical\s+2000001000\s+false`},
		{"roles reader", `NAME\s+CREATED AT`, `reader\s+\d{4}-`},
		{"rolebindings read", `NAME\s+ROLE\s+AGE`, `read\s+Role/reader\s`},
		{"clusterroles watcher", `NAME\s+CREATED AT`, `watcher\s+\d{4}-`},
		{"clusterrolebindings watch", `NAME\s+ROLE\s+AGE`, `watch\s+ClusterRole/watcher\s`},
		{"pdb web", `NAME\s+MIN AVAILABLE\s+MAX UNAVAILABLE\s+ALLOWED DISRUPTIONS\s+AGE`, `web\s+1\s+N/A\s+0\s`},
	} {
		out := c.mustKubectl(t, "", append([]string{"get"}, strings.Fields(tc.args)...)...)
		if !regexpLine(out, tc.header) || !regexpLine(out, tc.row) {
			t.Errorf("kubectl get %s: want header /%s/ and row /%s/:\n%s", tc.args, tc.header, tc.row, out)
		}
	}

	out = c.mustKubectl(t, "", "get", "all")
	for _, want := range []string{"service/kubernetes", "service/web", "replicationcontroller/legacy", "deployment.apps/web",
		"replicaset.apps/front", "statefulset.apps/db", "daemonset.apps/agent", "job.batch/once", "cronjob.batch/nightly"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get all lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "configmap/") || strings.Contains(out, "secret/") {
		t.Errorf("kubectl get all lists kinds outside the \"all\" category:\n%s", out)
	}
	out = c.mustKubectl(t, "", "get", "deploy", "web", "-o", "wide")
	if !regexpLine(out, `CONTAINERS\s+IMAGES\s+SELECTOR`) || !regexpLine(out, `web\s.*\sc\s+localhost/minik8s/netexec:v1\s+app=web`) {
		t.Errorf("kubectl get deploy -o wide:\n%s", out)
	}
	// A selector the object does not have is <none>, as metav1.FormatLabelSelector prints it.
	out = c.mustKubectl(t, "", "get", "cj", "nightly", "-o", "wide")
	if !regexpLine(out, `CONTAINERS\s+IMAGES\s+SELECTOR`) || !regexpLine(out, `nightly\s.*\s<none>$`) {
		t.Errorf("kubectl get cj -o wide:\n%s", out)
	}

	// Defaults are visible to clients as Kubernetes sets them.
	d, err := c.client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || d.Spec.Strategy.RollingUpdate.MaxSurge.String() != "25%" ||
		*d.Spec.RevisionHistoryLimit != 10 || *d.Spec.ProgressDeadlineSeconds != 600 || d.Spec.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("deployment not defaulted: %+v", d.Spec)
	}
	s, err := c.client.CoreV1().Secrets("default").Get(context.Background(), "creds", metav1.GetOptions{})
	if err != nil || string(s.Data["password"]) != "s3cret" || len(s.StringData) != 0 || s.Type != corev1.SecretTypeOpaque {
		t.Errorf("secret stringData not folded into data: %v %+v", err, s)
	}
	j, err := c.client.BatchV1().Jobs("default").Get(context.Background(), "once", metav1.GetOptions{})
	if err != nil || j.Spec.Selector.MatchLabels["batch.kubernetes.io/controller-uid"] != string(j.UID) || j.Spec.Template.Labels["job-name"] != "once" {
		t.Errorf("job selector not generated from its uid: %v %+v", err, j.Spec.Selector)
	}
}

func TestKubectlRefusesInvalidObjectsNamingTheField(t *testing.T) {
	c := startCluster(t)
	for _, tc := range []struct{ manifest, want string }{
		{`
apiVersion: apps/v1
kind: Deployment
metadata: {name: mismatch}
spec:
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: b}}
    spec: {containers: [{name: c, image: x}]}
`, "spec.template.metadata.labels: Invalid value: {\"app\":\"b\"}: `selector` does not match template `labels`"},
		{`
apiVersion: v1
kind: Service
metadata: {name: ports}
spec:
  ports: [{name: a, port: 70000}, {name: a, port: 80}]
`, `spec.ports[1].name: Duplicate value: "a"`},
		{`
apiVersion: batch/v1
kind: Job
metadata: {name: forever}
spec:
  template:
    spec: {containers: [{name: c, image: x}]}
`, `spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
	} {
		out, err := c.kubectl(t, tc.manifest, "create", "-f", "-")
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("kubectl create should fail with %q: %v\n%s", tc.want, err, out)
		}
	}
	c.mustKubectl(t, "", "create", "deployment", "web", "--image=localhost/minik8s/netexec:v1")
	out, err := c.kubectl(t, "", "patch", "deployment", "web", "--type=merge", "-p", `{"spec":{"selector":{"matchLabels":{"app":"other"}}}}`)
	if err == nil || !strings.Contains(out, "spec.selector") || !strings.Contains(out, "field is immutable") {
		t.Errorf("changing a deployment's selector should fail: %v\n%s", err, out)
	}
}

func TestKubectlScale(t *testing.T) {
	// The scale subresource as stored: no workload controller acts on the objects.
	c := startClusterWith(t, func(o *Options) { o.Controllers = []string{"namespace", "garbagecollector"} })
	c.mustKubectl(t, everyKind, "apply", "-f", "-")
	ctx := context.Background()
	for _, target := range []string{"deployment/web", "replicaset/front", "statefulset/db", "rc/legacy"} {
		out := c.mustKubectl(t, "", "scale", target, "--replicas=4")
		if !strings.Contains(out, "scaled") {
			t.Errorf("kubectl scale %s: %s", target, out)
		}
	}
	d, err := c.client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 4 || d.Generation != 2 {
		t.Errorf("deployment after kubectl scale: %v replicas=%v generation=%d", err, d.Spec.Replicas, d.Generation)
	}
	sts, err := c.client.AppsV1().StatefulSets("default").Get(ctx, "db", metav1.GetOptions{})
	if err != nil || *sts.Spec.Replicas != 4 {
		t.Errorf("statefulset after kubectl scale: %v %v", err, sts.Spec.Replicas)
	}
	rc, err := c.client.CoreV1().ReplicationControllers("default").Get(ctx, "legacy", metav1.GetOptions{})
	if err != nil || *rc.Spec.Replicas != 4 {
		t.Errorf("replication controller after kubectl scale: %v %v", err, rc.Spec.Replicas)
	}
	// With a precondition kubectl reads the Scale and writes it back.
	if out, err := c.kubectl(t, "", "scale", "deployment/web", "--current-replicas=3", "--replicas=1"); err == nil {
		t.Errorf("a failed precondition should refuse to scale:\n%s", out)
	}
	c.mustKubectl(t, "", "scale", "deployment/web", "--current-replicas=4", "--replicas=1")
	scale, err := c.client.AppsV1().Deployments("default").GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil || scale.Spec.Replicas != 1 || scale.Status.Selector != "app=web" {
		t.Errorf("scale subresource through client-go: %v %+v", err, scale)
	}
	scale.Spec.Replicas = -1
	if _, err := c.client.AppsV1().Deployments("default").UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.replicas") {
		t.Errorf("negative replicas: want 422 naming spec.replicas, got %v", err)
	}
	out := c.mustKubectl(t, "", "get", "deployment", "web", "--subresource=scale")
	if !regexpLine(out, `NAME\s+DESIRED\s+AVAILABLE\s+AGE`) || !regexpLine(out, `web\s+1\s+0\s`) {
		t.Errorf("kubectl get --subresource=scale:\n%s", out)
	}
}

// fastClient is a client-go clientset without client-side rate limits, to load the server.
func (c *cluster) fastClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg := c.adminConfig(t)
	cfg.QPS, cfg.Burst = 1000, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func clusterIPService(name string, port int32) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{Port: port}}}}
}

func TestServiceClusterIPAllocation(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	serviceRange := netip.MustParsePrefix("10.96.0.0/12")
	kube, err := c.client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || kube.Spec.ClusterIP != "10.96.0.1" || kube.Spec.Ports[0].Port != 443 {
		t.Fatalf("the kubernetes Service should hold the first IP of the range: %v %+v", err, kube)
	}

	const n = 200
	client := c.fastClient(t)
	ips := make([]string, n)
	var creates errgroup.Group
	for i := range n {
		creates.Go(func() error {
			svc, err := client.CoreV1().Services("default").Create(ctx, clusterIPService(fmt.Sprint("svc-", i), 80), metav1.CreateOptions{})
			if err != nil {
				return err
			}
			ips[i] = svc.Spec.ClusterIP
			return nil
		})
	}
	if err := creates.Wait(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{kube.Spec.ClusterIP: true}
	for i, ip := range ips {
		addr, err := netip.ParseAddr(ip)
		if err != nil || !serviceRange.Contains(addr) || seen[ip] {
			t.Fatalf("svc-%d got %q: not in %s or handed out twice", i, ip, serviceRange)
		}
		seen[ip] = true
	}

	// A requested IP that is taken is refused, naming the field.
	taken := clusterIPService("taken", 80)
	taken.Spec.ClusterIP = ips[0]
	_, err = client.CoreV1().Services("default").Create(ctx, taken, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.clusterIPs") || !strings.Contains(err.Error(), "provided IP is already allocated") {
		t.Errorf("a taken cluster IP: want 422 \"provided IP is already allocated\", got %v", err)
	}
	// Deleting gives it back: the next Service can ask for it.
	if err := client.CoreV1().Services("default").Delete(ctx, "svc-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := client.CoreV1().Services("default").Create(ctx, taken, metav1.CreateOptions{})
	if err != nil || again.Spec.ClusterIP != ips[0] {
		t.Errorf("the IP of a deleted Service should be free again: %v %+v", err, again)
	}
	// A dry run shows the range's network address, as kube's, and holds what it asks for
	// no longer than the request; a headless Service gets none.
	dry, err := client.CoreV1().Services("default").Create(ctx, clusterIPService("dry", 80), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || dry.Spec.ClusterIP != "10.96.0.0" {
		t.Fatalf("dry run: %v, cluster IP %q; want the network address 10.96.0.0", err, dry.Spec.ClusterIP)
	}
	held := clusterIPService("held", 80)
	held.Spec.ClusterIP = ips[1]
	if err := client.CoreV1().Services("default").Delete(ctx, "svc-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Services("default").Create(ctx, held.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry run asking for a free IP: %v", err)
	}
	if _, err := client.CoreV1().Services("default").Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Errorf("a dry run must not hold the IP it asked for: %v", err)
	}
	headless := clusterIPService("headless", 5432)
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	if h, err := client.CoreV1().Services("default").Create(ctx, headless, metav1.CreateOptions{}); err != nil || h.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("headless Service: %v %+v", err, h)
	}
	// The cluster IP is immutable.
	moved := again.DeepCopy()
	moved.Spec.ClusterIP, moved.Spec.ClusterIPs = ips[1], []string{ips[1]}
	if _, err := client.CoreV1().Services("default").Update(ctx, moved, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "may not change once set") {
		t.Errorf("changing a cluster IP: want 422, got %v", err)
	}
}

func TestServiceNodePortAllocation(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	client := c.fastClient(t)
	const n = 40
	ports := make([]int32, n)
	var creates errgroup.Group
	for i := range n {
		creates.Go(func() error {
			svc := clusterIPService(fmt.Sprint("np-", i), 80)
			svc.Spec.Type = corev1.ServiceTypeNodePort
			created, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			ports[i] = created.Spec.Ports[0].NodePort
			return nil
		})
	}
	if err := creates.Wait(); err != nil {
		t.Fatal(err)
	}
	seen := map[int32]bool{}
	for i, p := range ports {
		if p < 30000 || p > 32767 || seen[p] {
			t.Fatalf("np-%d got node port %d: outside 30000-32767 or handed out twice", i, p)
		}
		seen[p] = true
	}
	out := c.mustKubectl(t, "", "get", "svc", "np-0")
	if !regexpLine(out, fmt.Sprintf(`np-0\s+NodePort\s+10\.\S+\s+<none>\s+80:%d/TCP`, ports[0])) {
		t.Errorf("kubectl get svc of a NodePort Service:\n%s", out)
	}

	taken := clusterIPService("taken", 80)
	taken.Spec.Type = corev1.ServiceTypeNodePort
	taken.Spec.Ports[0].NodePort = ports[0]
	if _, err := client.CoreV1().Services("default").Create(ctx, taken, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "spec.ports[0].nodePort") || !strings.Contains(err.Error(), "provided port is already allocated") {
		t.Errorf("a taken node port: want 422, got %v", err)
	}
	outside := taken.DeepCopy()
	outside.Spec.Ports[0].NodePort = 8080
	if _, err := client.CoreV1().Services("default").Create(ctx, outside, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "30000-32767") {
		t.Errorf("a node port outside the range: want 422, got %v", err)
	}
	// Turning np-0 into a ClusterIP Service releases its node port.
	np0, err := client.CoreV1().Services("default").Get(ctx, "np-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	np0.Spec.Type = corev1.ServiceTypeClusterIP
	if np0, err = client.CoreV1().Services("default").Update(ctx, np0, metav1.UpdateOptions{}); err != nil || np0.Spec.Ports[0].NodePort != 0 {
		t.Fatalf("NodePort to ClusterIP: %v %+v", err, np0)
	}
	if _, err := client.CoreV1().Services("default").Create(ctx, taken, metav1.CreateOptions{}); err != nil {
		t.Errorf("the node port np-0 gave up should be free: %v", err)
	}
	// Deleting releases too.
	if err := client.CoreV1().Services("default").Delete(ctx, "np-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	reuse := taken.DeepCopy()
	reuse.Name, reuse.Spec.Ports[0].NodePort = "reuse", ports[1]
	if _, err := client.CoreV1().Services("default").Create(ctx, reuse, metav1.CreateOptions{}); err != nil {
		t.Errorf("the node port of a deleted Service should be free: %v", err)
	}
}

func TestServiceAllocationsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	sameDataDir := func(o *Options) { o.DataDir = dir }
	var ip string
	var port int32
	t.Run("first start", func(t *testing.T) {
		c := startClusterWith(t, sameDataDir)
		svc := clusterIPService("web", 80)
		svc.Spec.Type = corev1.ServiceTypeNodePort
		created, err := c.client.CoreV1().Services("default").Create(context.Background(), svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ip, port = created.Spec.ClusterIP, created.Spec.Ports[0].NodePort
	})
	t.Run("after a restart", func(t *testing.T) {
		c := startClusterWith(t, sameDataDir)
		ctx := context.Background()
		other := clusterIPService("other", 80)
		other.Spec.ClusterIP = ip
		if _, err := c.client.CoreV1().Services("default").Create(ctx, other, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("cluster IP %s should still be held after a restart: %v", ip, err)
		}
		other.Spec.ClusterIP, other.Spec.Type = "", corev1.ServiceTypeNodePort
		other.Spec.Ports[0].NodePort = port
		if _, err := c.client.CoreV1().Services("default").Create(ctx, other, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("node port %d should still be held after a restart: %v", port, err)
		}
		kube, err := c.client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil || kube.Spec.ClusterIP != "10.96.0.1" {
			t.Errorf("the kubernetes Service after a restart: %v %+v", err, kube)
		}
	})
}

// TestNodeListsAndWatchesServicesWithClusterIPs: a node's own credentials list and watch
// every namespace's Services with the kubelet's field selector spec.clusterIP!=None (its
// Service informer, for containers' variables), which leaves the headless ones out.
func TestNodeListsAndWatchesServicesWithClusterIPs(t *testing.T) {
	var dataDir string
	c := startClusterWith(t, func(o *Options) { dataDir = o.DataDir })
	ctx := t.Context()
	node := c.asNode(t, dataDir, "node-1")
	client, err := kubernetes.NewForConfig(node.adminConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	headless := clusterIPService("headless", 80)
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	for _, svc := range []*corev1.Service{clusterIPService("web", 80), headless} {
		if _, err := c.client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	opts := metav1.ListOptions{FieldSelector: "spec.clusterIP!=None"}
	list, err := client.CoreV1().Services("").List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, svc := range list.Items {
		names = append(names, svc.Namespace+"/"+svc.Name)
	}
	if !slices.Contains(names, "default/kubernetes") || !slices.Contains(names, "default/web") || slices.Contains(names, "default/headless") {
		t.Errorf("the node's list %v, want kubernetes and web, not headless", names)
	}
	opts.ResourceVersion = list.ResourceVersion
	w, err := client.CoreV1().Services("").Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	headless.Name = "headless-2"
	for _, svc := range []*corev1.Service{headless, clusterIPService("api", 80)} {
		if _, err := c.client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case ev := <-w.ResultChan():
		if svc, ok := ev.Object.(*corev1.Service); !ok || ev.Type != watch.Added || svc.Name != "api" {
			t.Errorf("the node's watch: %s %+v, want api Added", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Error("the node's watch saw nothing")
	}
}
