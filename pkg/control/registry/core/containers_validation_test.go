package core

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"sigs.k8s.io/yaml"

	"github.com/minik8s/minik8s/deploy/addons"
	"github.com/minik8s/minik8s/pkg/control/registry/apps"
	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	"github.com/minik8s/minik8s/pkg/poddefaults"
)

// defaulted gives c the defaults a container always has by validation (the pull and
// termination message policies), for tests that validate a spec not defaulted.
func defaulted(c corev1.Container) corev1.Container {
	c.ImagePullPolicy, c.TerminationMessagePolicy = corev1.PullIfNotPresent, corev1.TerminationMessageReadFile
	return c
}

// TestContainersValidation: each container field kube's validateContainers,
// validateInitContainers and validateContainerCommon check (pkg/apis/core/validation,
// v1.36), refused with kube's path and words, after the defaults as in the API server;
// the same spec is checked alike as a Deployment's template.
func TestContainersValidation(t *testing.T) {
	int64p := func(v int64) *int64 { return &v }
	rro := func(m corev1.RecursiveReadOnlyMode) *corev1.RecursiveReadOnlyMode { return &m }
	propagation := func(m corev1.MountPropagationMode) *corev1.MountPropagationMode { return &m }
	policy := func(p corev1.ContainerRestartPolicy) *corev1.ContainerRestartPolicy { return &p }
	exec := &corev1.ExecAction{Command: []string{"true"}}
	c0 := "spec.containers[0]."
	for name, tc := range map[string]struct {
		change  func(s *corev1.PodSpec, c *corev1.Container)
		want    []string
		podOnly bool // a Deployment's pods restart always
	}{
		"valid, the defaulted fields omitted": {change: func(s *corev1.PodSpec, c *corev1.Container) {
			c.Env = []corev1.EnvVar{{Name: "1-relaxed.name", Value: "v"},
				{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
				{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1m")}}}}
			c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "a/b"}}
			c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}}
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}
			c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 0}}}
			c.RestartPolicy = policy(corev1.ContainerRestartPolicyNever)
			c.RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart,
				ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
			s.InitContainers[0].RestartPolicy = policy(corev1.ContainerRestartPolicyAlways)
			s.InitContainers[0].StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: exec}}
		}},
		"env name": {change: func(_ *corev1.PodSpec, c *corev1.Container) {
			c.Env = []corev1.EnvVar{{Name: "A=B"}, {Value: "v"}}
		}, want: []string{
			c0 + `env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`,
			c0 + `env[1].name: Required value`}},
		"env valueFrom sources": {change: func(_ *corev1.PodSpec, c *corev1.Container) {
			ref := &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}
			c.Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{}},
				{Name: "B", Value: "v", ValueFrom: &corev1.EnvVarSource{FieldRef: ref}},
				{Name: "C", ValueFrom: &corev1.EnvVarSource{FieldRef: ref, SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}
		}, want: []string{
			c0 + "env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`",
			c0 + "env[1].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
			c0 + "env[2].valueFrom: Invalid value: \"\": may not have more than one field specified at a time"}},
		"env fieldRef": {change: func(_ *corev1.PodSpec, c *corev1.Container) {
			from := func(path string) *corev1.EnvVarSource {
				return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
			}
			c.Env = []corev1.EnvVar{{Name: "A", ValueFrom: from("spec.restartPolicy")}, {Name: "B", ValueFrom: from("status.foo")},
				{Name: "C", ValueFrom: from("metadata.labels['a b']")}, {Name: "D", ValueFrom: from("metadata.name['x']")}}
		}, want: []string{
			c0 + `env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "spec.restartPolicy": supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"`,
			c0 + `env[1].valueFrom.fieldRef.fieldPath: Invalid value: "status.foo": error converting fieldPath: field label not supported: status.foo`,
			c0 + `env[2].valueFrom.fieldRef: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			c0 + `env[3].valueFrom.fieldRef.fieldPath: Invalid value: "metadata.name['x']": error converting fieldPath: field label does not support subscript: metadata.name['x']`}},
		"env resourceFieldRef and key refs": {change: func(_ *corev1.PodSpec, c *corev1.Container) {
			c.Env = []corev1.EnvVar{
				{Name: "A", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.gpu"}}},
				{Name: "B", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1Mi")}}},
				{Name: "C", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "Bad_Name"}}}},
				{Name: "D", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "a/b"}}}}
		}, want: []string{
			c0 + `env[0].valueFrom.resourceFieldRef.resource: Unsupported value: "limits.gpu": supported values: "limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"`,
			c0 + `env[1].valueFrom.resourceFieldRef.divisor: Invalid value: "requests.cpu": only divisor's values 1m and 1 are supported with the cpu resource`,
			c0 + `env[2].valueFrom.configMapKeyRef.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			c0 + `env[2].valueFrom.configMapKeyRef.key: Required value`,
			c0 + `env[3].valueFrom.secretKeyRef.key: Invalid value: "a/b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`}},
		"envFrom": {change: func(_ *corev1.PodSpec, c *corev1.Container) {
			c.EnvFrom = []corev1.EnvFromSource{{Prefix: "a="}, {ConfigMapRef: &corev1.ConfigMapEnvSource{}, SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}}
		}, want: []string{
			c0 + `envFrom[0].prefix: Invalid value: "a=": a valid environment variable name must consist only of printable ASCII characters other than '='`,
			c0 + "envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`",
			c0 + `envFrom[1].configMapRef.name: Required value`,
			c0 + `envFrom: Invalid value: "": may not have more than one field specified at a time`}},
		"volumeMounts": {change: func(_ *corev1.PodSpec, c *corev1.Container) {
			c.VolumeMounts = []corev1.VolumeMount{{Name: "missing", MountPath: "/a"}, {Name: "data"}, {Name: "data", MountPath: "/a", SubPath: "/abs"},
				{Name: "data", MountPath: "/b", SubPath: "x/../y", SubPathExpr: "$(POD)"},
				{Name: "data", MountPath: "/c", MountPropagation: propagation(corev1.MountPropagationBidirectional), RecursiveReadOnly: rro(corev1.RecursiveReadOnlyEnabled)}}
		}, want: []string{
			c0 + `volumeMounts[0].name: Not found: "missing"`,
			c0 + `volumeMounts[1].mountPath: Required value`,
			c0 + `volumeMounts[2].mountPath: Invalid value: "/a": must be unique`,
			c0 + `volumeMounts.subPath: Invalid value: "/abs": must be a relative path`,
			c0 + `volumeMounts.subPath: Invalid value: "x/../y": must not contain '..'`,
			c0 + `volumeMounts[3].subPathExpr: Invalid value: "$(POD)": subPathExpr and subPath are mutually exclusive`,
			c0 + `volumeMounts.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers`,
			c0 + `volumeMounts.recursiveReadOnly: Forbidden: may only be specified when readOnly is true`,
			c0 + `volumeMounts.recursiveReadOnly: Forbidden: may only be specified when mountPropagation is None or not specified`}},
		"volumeDevices": {change: func(_ *corev1.PodSpec, c *corev1.Container) {
			c.VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/x"}, {Name: "claim", DevicePath: "/dev/x"}}
		}, want: []string{
			c0 + `volumeDevices[0].name: Invalid value: "data": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode`,
			c0 + `volumeDevices[1].devicePath: Invalid value: "/dev/x": must be unique`}},
		"probe handlers": {change: func(_ *corev1.PodSpec, c *corev1.Container) {
			c.LivenessProbe = &corev1.Probe{}
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: exec, HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}}
			c.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(0), Scheme: "FTP"}}}
		}, want: []string{
			c0 + `livenessProbe: Required value: must specify a handler type`,
			c0 + `readinessProbe.httpGet: Forbidden: may not specify more than 1 handler type`,
			c0 + `startupProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive`,
			c0 + `startupProbe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"`}},
		"probe numbers": {change: func(_ *corev1.PodSpec, c *corev1.Container) {
			handler := corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("Bad_Name")}}
			c.LivenessProbe = &corev1.Probe{ProbeHandler: handler, SuccessThreshold: 2, InitialDelaySeconds: -1, TerminationGracePeriodSeconds: int64p(0)}
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: exec}, FailureThreshold: -3, TerminationGracePeriodSeconds: int64p(5)}
		}, want: []string{
			c0 + `livenessProbe.tcpSocket.port: Invalid value: "Bad_Name": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`,
			c0 + `livenessProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0`,
			c0 + `livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0`,
			c0 + `livenessProbe.successThreshold: Invalid value: 2: must be 1`,
			c0 + `readinessProbe.failureThreshold: Invalid value: -3: must be greater than or equal to 0`,
			c0 + `readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes`}},
		"lifecycle, policies": {change: func(_ *corev1.PodSpec, c *corev1.Container) {
			c.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{}},
				PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 31}}}
			c.ImagePullPolicy, c.TerminationMessagePolicy = "Sometimes", "Maybe"
		}, want: []string{
			c0 + `terminationMessagePolicy: Unsupported value: "Maybe": supported values: "File", "FallbackToLogsOnError"`,
			c0 + `imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`,
			c0 + `lifecycle.postStart.exec.command: Required value`,
			c0 + `lifecycle.preStop.sleep: Invalid value: 31: must be non-negative and less than terminationGracePeriodSeconds (30)`}},
		"init containers": {change: func(s *corev1.PodSpec, _ *corev1.Container) {
			ic := &s.InitContainers[0]
			ic.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: exec}}
			ic.Lifecycle = &corev1.Lifecycle{}
			ic.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
		}, want: []string{
			`spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers without restartPolicy=Always`,
			`spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always`,
			`spec.initContainers[0].resizePolicy[0].restartPolicy: Invalid value: "RestartContainer": must not be set to 'RestartContainer' for non-sidecar initContainers`}},
		"restart policy and rules": {change: func(s *corev1.PodSpec, c *corev1.Container) {
			s.InitContainers[0].RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart}}
			c.RestartPolicy = policy("Sometimes")
			c.RestartPolicyRules = []corev1.ContainerRestartRule{{Action: "Stop"},
				{Action: corev1.ContainerRestartRuleActionRestartAllContainers, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: "Is"}}}
		}, want: []string{
			c0 + `restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"`,
			c0 + `restartPolicyRules[0].action: Unsupported value: "Stop": supported values: "Restart", "RestartAllContainers"`,
			c0 + `restartPolicyRules[0].exitCodes: Required value: must be specified`,
			c0 + `restartPolicyRules[1].exitCodes.operator: Unsupported value: "Is": supported values: "In", "NotIn"`,
			`spec.initContainers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used`}},
		"resize policy": {change: func(s *corev1.PodSpec, c *corev1.Container) {
			s.RestartPolicy = corev1.RestartPolicyNever
			c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer},
				{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}, {ResourceName: "gpu", RestartPolicy: corev1.NotRequired}}
		}, want: []string{
			c0 + `resizePolicy: Invalid value: "RestartContainer": must be 'NotRequired' when pod ` + "`restartPolicy`" + ` is 'Never'`,
			c0 + `resizePolicy[1]: Duplicate value: "cpu"`,
			c0 + `resizePolicy: Unsupported value: "gpu": supported values: "cpu", "memory"`}, podOnly: true},
		"host ports": {change: func(s *corev1.PodSpec, c *corev1.Container) {
			c.Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
			s.Containers = append(s.Containers, corev1.Container{Name: "other", Image: "busybox:1",
				Ports: []corev1.ContainerPort{{ContainerPort: 81, HostPort: 8080}, {ContainerPort: 82, HostPort: 8080, Protocol: corev1.ProtocolUDP}}})
			s.InitContainers = append(s.InitContainers, corev1.Container{Name: "init2", Image: "busybox:1",
				Ports: []corev1.ContainerPort{{ContainerPort: 81, HostPort: 8080}, {ContainerPort: 82, HostPort: 8080}}})
		}, want: []string{
			`spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//8080"`,
			`spec.initContainers[0].ports[1].hostPort: Duplicate value: "TCP//8080"`}},
		"no containers": {change: func(s *corev1.PodSpec, _ *corev1.Container) {
			s.Containers = nil
		}, want: []string{`spec.containers: Required value`}},
		"securityContext": {change: func(_ *corev1.PodSpec, c *corev1.Container) {
			unmasked, localhost := corev1.UnmaskedProcMount, "/abs.json"
			c.SecurityContext = &corev1.SecurityContext{RunAsUser: int64p(-1), RunAsGroup: int64p(1 << 31), ProcMount: &unmasked,
				SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &localhost},
				AppArmorProfile: &corev1.AppArmorProfile{Type: "Strict"}}
		}, want: []string{
			c0 + `securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive`,
			c0 + `securityContext.runAsGroup: Invalid value: 2147483648: must be between 0 and 2147483647, inclusive`,
			c0 + `securityContext.procMount: Invalid value: "Unmasked": ` + "`hostUsers`" + ` must be false to use ` + "`Unmasked`",
			c0 + `securityContext.seccompProfile.localhostProfile: Invalid value: "/abs.json": must be a relative path`,
			c0 + `securityContext.appArmorProfile.type: Unsupported value: "Strict": supported values: "Localhost", "RuntimeDefault", "Unconfined"`}},
	} {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: registrytest.ObjMeta("p"), Spec: corev1.PodSpec{
				Volumes: []corev1.Volume{{Name: "data"},
					{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}},
				InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1"}},
				Containers:     []corev1.Container{{Name: "app", Image: "busybox:1", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}}}}}}
			tc.change(&pod.Spec, &pod.Spec.Containers[0])
			template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}, Spec: *pod.Spec.DeepCopy()}
			poddefaults.Pod(pod)
			if got := registrytest.Messages(validatePod(pod)); !equalLines(got, tc.want) {
				t.Errorf("pod: errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if tc.podOnly {
				return
			}
			d := &appsv1.Deployment{ObjectMeta: registrytest.ObjMeta("d"), Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}, Template: template}}
			apps.DeploymentRules.Default(d)
			var got []string
			for _, e := range registrytest.Messages(apps.DeploymentRules.Validate(d)) {
				got = append(got, strings.Replace(e, "spec.template.spec.", "spec.", 1))
			}
			if !equalLines(got, tc.want) {
				t.Errorf("deployment: errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestShippedAddonsValid: the CoreDNS add-on's Deployment passes the containers'
// validation as the API server runs it (defaults first).
func TestShippedAddonsValid(t *testing.T) {
	for _, doc := range strings.Split(string(addons.CoreDNS), "\n---") {
		if !strings.Contains(doc, "kind: Deployment") {
			continue
		}
		d := &appsv1.Deployment{}
		if err := yaml.Unmarshal([]byte(doc), d); err != nil {
			t.Fatal(err)
		}
		apps.DeploymentRules.Default(d)
		if errs := apps.DeploymentRules.Validate(d); len(errs) != 0 {
			t.Errorf("%s: %v", d.Name, errs.ToAggregate())
		}
		return
	}
	t.Fatal("no Deployment in the CoreDNS add-on")
}

func equalLines(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}
