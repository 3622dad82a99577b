package podsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/minik8s/minik8s/pkg/agent/envfile"
	"github.com/minik8s/minik8s/pkg/agent/fieldpath"
	"github.com/minik8s/minik8s/pkg/agent/podrefs"
	"github.com/minik8s/minik8s/pkg/agent/staticpod"
	"github.com/minik8s/minik8s/pkg/agent/volumes"
)

// containerEnv is a container's environment as the kubelet makes it: the Services'
// variables (serviceEnv), then envFrom sources in order, then env (later names win); values from the downward API, ConfigMaps, Secrets
// and resources resolved, as are env files in the pod's volumes (vols); $(VAR) references
// to earlier variables expanded. A missing source that is not optional is an error,
// reported as CreateContainerConfigError with the kubelet's message.
func (s *Syncer) containerEnv(ctx context.Context, pod *corev1.Pod, c *corev1.Container, podIP string, vols map[string]volumes.Volume) ([]string, error) {
	vars := map[string]string{}
	var order []string
	set := func(name, value string) {
		if _, ok := vars[name]; !ok {
			order = append(order, name)
		}
		vars[name] = value
	}
	services, err := s.serviceEnv(pod)
	if err != nil {
		return nil, err
	}
	for _, kv := range services {
		set(kv[0], kv[1])
	}
	for _, from := range c.EnvFrom {
		// Keys need no check: ConfigMap and Secret keys are valid variable names.
		data, err := s.envFromSource(ctx, pod.Namespace, from)
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			set(from.Prefix+k, data[k])
		}
	}
	addrs := fieldpath.Addresses{PodIP: podIP, HostIP: s.cfg.NodeIP}
	for _, e := range c.Env {
		value := expand(e.Value, vars)
		if e.ValueFrom != nil {
			v, ok, err := s.envValueFrom(ctx, pod, c, e.ValueFrom, addrs, vols)
			if err != nil {
				return nil, err
			}
			if !ok { // an optional key that is missing: no variable
				continue
			}
			value = v
		}
		set(e.Name, value)
	}
	env := make([]string, 0, len(order))
	for _, name := range order {
		env = append(env, name+"="+vars[name])
	}
	return env, nil
}

// serviceEnv is the environment a container gets for Services, as the kubelet's
// getServiceEnvVarMap, read from the Service informer's lister (no request to the API):
// the API's `kubernetes` Service in default always (what client-go's InClusterConfig
// reads), and, unless the pod sets enableServiceLinks false, every Service of the pod's
// namespace that has a cluster IP (one there named `kubernetes` wins), in Docker's link
// style: NAME_SERVICE_HOST, NAME_SERVICE_PORT[_PORTNAME], NAME_PORT,
// NAME_PORT_80_TCP[_PROTO|_PORT|_ADDR]. Until the informer has read the Services once, a
// pod's start fails with the kubelet's error (its containers would miss the `kubernetes`
// Service's variables), but a static pod's, which starts without the API (how a control
// plane bootstraps), as the kubelet's makeEnvironmentVariables: it gets what the informer has.
func (s *Syncer) serviceEnv(pod *corev1.Pod) ([][2]string, error) {
	if s.services.Lister == nil { // no API: no Services
		return nil, nil
	}
	if !staticpod.IsStatic(pod) && !s.services.HasSynced() {
		return nil, errors.New("services have not yet been read at least once, cannot construct envvars")
	}
	byName := map[string]*corev1.Service{}
	if master, err := s.services.Lister.Services(metav1.NamespaceDefault).Get("kubernetes"); err == nil {
		byName[master.Name] = master
	}
	if pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks {
		list, err := s.services.Lister.Services(pod.Namespace).List(labels.Everything())
		if err != nil {
			return nil, fmt.Errorf("failed to list services when setting up env vars: %w", err)
		}
		for _, svc := range list {
			byName[svc.Name] = svc
		}
	}
	var env [][2]string
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		env = append(env, serviceLinkEnv(byName[name])...)
	}
	return env, nil
}

// serviceLinkEnv are one Service's variables (the kubelet's envvars.FromServices), none
// for a Service without a cluster IP (headless, ExternalName).
func serviceLinkEnv(svc *corev1.Service) [][2]string {
	ip := svc.Spec.ClusterIP
	if ip == "" || ip == corev1.ClusterIPNone || len(svc.Spec.Ports) == 0 {
		return nil
	}
	prefix := strings.ToUpper(strings.ReplaceAll(svc.Name, "-", "_"))
	env := [][2]string{{prefix + "_SERVICE_HOST", ip}, {prefix + "_SERVICE_PORT", fmt.Sprint(svc.Spec.Ports[0].Port)}}
	for _, p := range svc.Spec.Ports {
		if p.Name != "" {
			env = append(env, [2]string{prefix + "_SERVICE_PORT_" + strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_")), fmt.Sprint(p.Port)})
		}
	}
	for i, p := range svc.Spec.Ports {
		proto := strings.ToLower(string(p.Protocol))
		if proto == "" {
			proto = "tcp"
		}
		url := fmt.Sprintf("%s://%s", proto, net.JoinHostPort(ip, fmt.Sprint(p.Port)))
		if i == 0 { // Docker's special case of the first port
			env = append(env, [2]string{prefix + "_PORT", url})
		}
		portPrefix := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(proto))
		env = append(env, [2]string{portPrefix, url}, [2]string{portPrefix + "_PROTO", proto},
			[2]string{portPrefix + "_PORT", fmt.Sprint(p.Port)}, [2]string{portPrefix + "_ADDR", ip})
	}
	return env
}

// envFromSource reads the ConfigMap or Secret of an envFrom entry; a missing optional
// one is empty.
func (s *Syncer) envFromSource(ctx context.Context, ns string, from corev1.EnvFromSource) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm, found, err := podrefs.Get(ctx, s.client.CoreV1().ConfigMaps(ns).Get, "configmap", from.ConfigMapRef.Name, isTrue(from.ConfigMapRef.Optional))
		if err != nil || !found {
			return nil, err
		}
		return cm.Data, nil
	case from.SecretRef != nil:
		s, found, err := podrefs.Get(ctx, s.client.CoreV1().Secrets(ns).Get, "secret", from.SecretRef.Name, isTrue(from.SecretRef.Optional))
		if err != nil || !found {
			return nil, err
		}
		data := make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			data[k] = string(v)
		}
		return data, nil
	}
	return nil, nil
}

// envValueFrom resolves one env valueFrom; ok is false for a missing optional key.
func (s *Syncer) envValueFrom(ctx context.Context, pod *corev1.Pod, c *corev1.Container, from *corev1.EnvVarSource, addrs fieldpath.Addresses, vols map[string]volumes.Volume) (string, bool, error) {
	switch {
	case from.FieldRef != nil:
		v, err := fieldpath.Value(pod, from.FieldRef.FieldPath, addrs)
		return v, err == nil, err
	case from.ResourceFieldRef != nil:
		v, err := fieldpath.ResourceValue(pod, c.Name, from.ResourceFieldRef, s.cfg.Allocatable)
		return v, err == nil, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		cm, found, err := podrefs.Get(ctx, s.client.CoreV1().ConfigMaps(pod.Namespace).Get, "configmap", ref.Name, isTrue(ref.Optional))
		if err != nil || !found {
			return "", false, err
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, true, nil
		}
		if isTrue(ref.Optional) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, pod.Namespace, ref.Name)
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		s, found, err := podrefs.Get(ctx, s.client.CoreV1().Secrets(pod.Namespace).Get, "secret", ref.Name, isTrue(ref.Optional))
		if err != nil || !found {
			return "", false, err
		}
		if v, ok := s.Data[ref.Key]; ok {
			return string(v), true, nil
		}
		if isTrue(ref.Optional) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", ref.Key, pod.Namespace, ref.Name)
	case from.FileKeyRef != nil:
		return s.envFileValue(pod, from.FileKeyRef, vols)
	}
	return "", false, fmt.Errorf("env valueFrom names no source")
}

// envFileValue is a fileKeyRef's value as the kubelet's makeEnvironmentVariables reads
// it: from the env file the pod wrote into one of its volumes (an init container,
// typically); an empty or missing key is no variable if optional, else an error. Why a
// file could not be read or parsed goes to the log: the pod's status says only
// "couldn't parse env file", as the kubelet's does.
func (s *Syncer) envFileValue(pod *corev1.Pod, ref *corev1.FileKeySelector, vols map[string]volumes.Volume) (string, bool, error) {
	vol, ok := vols[ref.VolumeName]
	if !ok {
		return "", false, fmt.Errorf("cannot find the volume %q referenced by FileKeyRef", ref.VolumeName)
	}
	v, err := envfile.Lookup(vol.Path, ref.Path, ref.Key)
	if err != nil {
		s.log.Error("Failed to parse env file", "pod", PodKey(pod), "err", err)
		return "", false, errors.New("couldn't parse env file")
	}
	if v != "" {
		return v, true, nil
	}
	if isTrue(ref.Optional) {
		return "", false, nil
	}
	return "", false, fmt.Errorf("environment variable key %q not found in file %q", ref.Key, filepath.Join(vol.Path, ref.Path))
}

func isTrue(b *bool) bool { return b != nil && *b }

// expand replaces $(NAME) with the value of an earlier variable, as Kubernetes does in
// env values, command and args: $$ is a literal $, and a reference to an unknown name
// stays as written.
func expand(s string, vars map[string]string) string {
	return expandWith(s, func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	})
}

// expandWith is expand with the values from lookup; a name it does not know (false)
// stays as written.
func expandWith(s string, lookup func(name string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			if v, ok := lookup(s[i+2 : i+2+end]); ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// withSubPaths is c with each volumeMount's subPathExpr expanded into its subPath by the
// container's environment, as the kubelet does: a variable missing or empty is an error
// (the pod waits in CreateContainerConfigError until, say, the annotation it reads is set).
func withSubPaths(c *corev1.Container, env []string) (*corev1.Container, error) {
	if !slices.ContainsFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.SubPathExpr != "" }) {
		return c, nil
	}
	vars := envMap(env)
	c = c.DeepCopy()
	for i := range c.VolumeMounts {
		vm := &c.VolumeMounts[i]
		if vm.SubPathExpr == "" {
			continue
		}
		var missing []string
		vm.SubPath = expandWith(vm.SubPathExpr, func(name string) (string, bool) {
			if vars[name] == "" && !slices.Contains(missing, name) {
				missing = append(missing, name)
			}
			return vars[name], true
		})
		vm.SubPathExpr = ""
		if len(missing) > 0 {
			slices.Sort(missing)
			return nil, fmt.Errorf("missing value for %s", strings.Join(missing, ", "))
		}
	}
	return c, nil
}

// expandAll expands $(VAR) references in a container's command or args.
func expandAll(list []string, env []string) []string {
	if len(list) == 0 {
		return list
	}
	vars := envMap(env)
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = expand(s, vars)
	}
	return out
}

// envMap is a container's environment (NAME=value) by name.
func envMap(env []string) map[string]string {
	vars := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	return vars
}
