package core

import (
	"slices"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/apps"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodDNSValidation: kube's checks of a pod's DNS fields (dnsPolicy, dnsConfig,
// hostname, subdomain), each error with kube's field path and wording, on a pod and on a
// workload's pod template alike.
func TestPodDNSValidation(t *testing.T) {
	pod := func(f func(*corev1.PodSpec)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
				Containers: []corev1.Container{defaulted(corev1.Container{Name: "c", Image: "busybox"})}}}
		f(&p.Spec)
		return p
	}
	for name, tc := range map[string]struct {
		spec func(*corev1.PodSpec)
		want []string // each error, in order
	}{
		"valid": {spec: func(s *corev1.PodSpec) {
			s.DNSPolicy = corev1.DNSNone
			s.Hostname, s.Subdomain = "h", "sub"
			s.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.96.0.10", "fd00::10"},
				Searches: []string{"ns.svc.cluster.local", "my_domain.example.", "."},
				Options:  []corev1.PodDNSConfigOption{{Name: "ndots", Value: new("2")}, {Name: "edns0"}}}
		}},
		"policy unknown": {spec: func(s *corev1.PodSpec) { s.DNSPolicy = "Foo" },
			want: []string{`spec.dnsPolicy: Unsupported value: "Foo": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"`}},
		"None without dnsConfig": {spec: func(s *corev1.PodSpec) { s.DNSPolicy = corev1.DNSNone },
			want: []string{"spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"}},
		"None without nameservers": {spec: func(s *corev1.PodSpec) {
			s.DNSPolicy = corev1.DNSNone
			s.DNSConfig = &corev1.PodDNSConfig{Searches: []string{"a_b..c"}}
		}, want: []string{"spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None"}},
		"nameservers": {spec: func(s *corev1.PodSpec) {
			s.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "1.1.1.300", "01.1.1.1", "1.1.1.4"}}
		}, want: []string{
			`spec.dnsConfig.nameservers: Invalid value: ["1.1.1.1","1.1.1.300","01.1.1.1","1.1.1.4"]: must not have more than 3 nameservers`,
			`spec.dnsConfig.nameservers[1]: Invalid value: "1.1.1.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
			`spec.dnsConfig.nameservers[2]: Invalid value: "01.1.1.1": must not have leading 0s`,
		}},
		"searches": {spec: func(s *corev1.PodSpec) {
			s.DNSConfig = &corev1.PodDNSConfig{Searches: []string{"-x.y", "ok.", "A.b"}}
		}, want: []string{
			`spec.dnsConfig.searches[0]: Invalid value: "-x.y": a lowercase RFC 1123 subdomain`,
			`spec.dnsConfig.searches[2]: Invalid value: "A.b": a lowercase RFC 1123 subdomain`,
		}},
		"too many searches": {spec: func(s *corev1.PodSpec) {
			s.DNSConfig = &corev1.PodDNSConfig{Searches: strings.Fields(strings.Repeat("a ", 33))}
		}, want: []string{`spec.dnsConfig.searches: Invalid value: ["a",`}},
		"search list too long": {spec: func(s *corev1.PodSpec) {
			s.DNSConfig = &corev1.PodDNSConfig{Searches: strings.Fields(strings.Repeat(strings.Repeat("a", 63)+"."+strings.Repeat("b", 63)+" ", 17))}
		}, want: []string{"must not have more than 2048 characters (including spaces) in the search list"}},
		"option without name": {spec: func(s *corev1.PodSpec) {
			s.DNSConfig = &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{Value: new("1")}}}
		}, want: []string{"spec.dnsConfig.options[0]: Required value: must not be empty"}},
		"hostname and subdomain": {spec: func(s *corev1.PodSpec) { s.Hostname, s.Subdomain = "A_b", "x.y" },
			want: []string{
				`spec.hostname: Invalid value: "A_b": a lowercase RFC 1123 label must consist of`,
				`spec.subdomain: Invalid value: "x.y": must not contain dots`,
			}},
	} {
		t.Run(name, func(t *testing.T) {
			p := pod(tc.spec)
			check := func(what string, errs []string) {
				if len(errs) != len(tc.want) {
					t.Fatalf("%s: %d errors, want %d:\n%s", what, len(errs), len(tc.want), strings.Join(errs, "\n"))
				}
				for i, want := range tc.want {
					if !strings.HasPrefix(errs[i], want) && !strings.Contains(errs[i], want) {
						t.Errorf("%s: error %d %q, want %q", what, i, errs[i], want)
					}
				}
			}
			var errs []string
			for _, e := range validatePod(p) {
				errs = append(errs, e.Error())
			}
			check("pod", errs)
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"},
				Spec: appsv1.DeploymentSpec{Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}, Spec: p.Spec}}}
			errs = nil
			for _, e := range apps.DeploymentRules.Validate(d) {
				errs = append(errs, strings.Replace(e.Error(), "spec.template.spec.", "spec.", 1))
			}
			check("deployment", errs)
		})
	}
}

// TestPodHostnameOverrideValidation: kube's validatePodHostName, with its exact errors, on
// a pod and on a workload's template alike: spec.hostnameOverride is a DNS subdomain of at
// most 64 characters, not with setHostnameAsFQDN or hostNetwork; like the rest of a pod's
// spec it may not change.
func TestPodHostnameOverrideValidation(t *testing.T) {
	subdomainMsg := "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
	for name, tc := range map[string]struct {
		spec func(*corev1.PodSpec)
		want []string
	}{
		"a subdomain, with hostname and subdomain": {spec: func(s *corev1.PodSpec) {
			s.HostnameOverride, s.Hostname, s.Subdomain, s.SetHostnameAsFQDN = new("my.host-1"), "h", "sub", new(false)
		}},
		"64 characters": {spec: func(s *corev1.PodSpec) { s.HostnameOverride = new(strings.Repeat("a", 64)) }},
		"65 characters": {spec: func(s *corev1.PodSpec) { s.HostnameOverride = new(strings.Repeat("a", 65)) },
			want: []string{"spec.hostnameOverride: Too long: may not be more than 64 bytes"}},
		"empty": {spec: func(s *corev1.PodSpec) { s.HostnameOverride = new("") },
			want: []string{`spec.hostnameOverride: Invalid value: "": ` + subdomainMsg}},
		"not a subdomain": {spec: func(s *corev1.PodSpec) { s.HostnameOverride = new("Not_RFC1123") },
			want: []string{`spec.hostnameOverride: Invalid value: "Not_RFC1123": ` + subdomainMsg}},
		"with setHostnameAsFQDN": {spec: func(s *corev1.PodSpec) {
			s.HostnameOverride, s.Subdomain, s.SetHostnameAsFQDN = new("h"), "sub", new(true)
		}, want: []string{"spec.hostnameOverride: Forbidden: may not be specified when setHostnameAsFQDN is true"}},
		"everything wrong": {spec: func(s *corev1.PodSpec) {
			s.HostnameOverride, s.SetHostnameAsFQDN, s.HostNetwork = new(strings.Repeat("A", 65)), new(true), true
			s.DNSPolicy = corev1.DNSClusterFirstWithHostNet
		}, want: []string{
			"spec.hostnameOverride: Forbidden: may not be specified when setHostnameAsFQDN is true",
			"spec.hostnameOverride: Forbidden: may not be specified when hostNetwork is true",
			"spec.hostnameOverride: Too long: may not be more than 64 bytes",
			`spec.hostnameOverride: Invalid value: "` + strings.Repeat("A", 65) + `": ` + subdomainMsg,
		}},
	} {
		t.Run(name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
					Containers: []corev1.Container{defaulted(corev1.Container{Name: "c", Image: "busybox"})}}}
			tc.spec(&p.Spec)
			var errs []string
			for _, e := range validatePod(p) {
				errs = append(errs, e.Error())
			}
			if !slices.Equal(errs, tc.want) {
				t.Errorf("pod:\n%s\nwant:\n%s", strings.Join(errs, "\n"), strings.Join(tc.want, "\n"))
			}
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"},
				Spec: appsv1.DeploymentSpec{Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}, Spec: p.Spec}}}
			errs = nil
			for _, e := range apps.DeploymentRules.Validate(d) {
				errs = append(errs, strings.Replace(e.Error(), "spec.template.spec.", "spec.", 1))
			}
			if !slices.Equal(errs, tc.want) {
				t.Errorf("deployment:\n%s\nwant:\n%s", strings.Join(errs, "\n"), strings.Join(tc.want, "\n"))
			}
			if len(tc.want) != 0 {
				return
			}
			changed := p.DeepCopy()
			changed.Spec.HostnameOverride = new("other")
			if errs := validatePodUpdate(changed, p); len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "spec: Forbidden: pod updates may not change fields other than") {
				t.Errorf("hostnameOverride changed: %v", errs)
			}
		})
	}
}
