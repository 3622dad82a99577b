package core

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/allocator"
	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	"github.com/minik8s/minik8s/pkg/control/store/storetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func service(name string, ports ...corev1.ServicePort) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: registrytest.ObjMeta(name), Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: ports}}
	svc.UID = types.UID("uid-" + name)
	return svc
}

func TestServiceDefaults(t *testing.T) {
	svc := service("web", corev1.ServicePort{Port: 80}, corev1.ServicePort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")})
	svc.Spec.Ports[0].Name = "http"
	if errs := registrytest.CreateSteps(ServiceRules, svc); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	s := svc.Spec
	if s.Type != corev1.ServiceTypeClusterIP || s.SessionAffinity != corev1.ServiceAffinityNone || *s.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster ||
		s.ExternalTrafficPolicy != "" {
		t.Errorf("service not defaulted: %+v", s)
	}
	if p := s.Ports[0]; p.Protocol != corev1.ProtocolTCP || p.TargetPort != intstr.FromInt32(80) {
		t.Errorf("port 0 not defaulted: %+v", p)
	}
	if p := s.Ports[1]; p.TargetPort != intstr.FromString("dns") {
		t.Errorf("a named target port was replaced: %+v", p)
	}
	np := service("np", corev1.ServicePort{Port: 80})
	np.Spec.Type = corev1.ServiceTypeLoadBalancer
	ServiceRules.Default(np)
	if np.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster || !*np.Spec.AllocateLoadBalancerNodePorts {
		t.Errorf("load balancer not defaulted: %+v", np.Spec)
	}
}

func TestServiceValidation(t *testing.T) {
	svc := service("web", corev1.ServicePort{Name: "a", Port: 70000}, corev1.ServicePort{Name: "a", Port: 80, NodePort: 30080})
	errs := registrytest.CreateSteps(ServiceRules, svc)
	registrytest.ExpectErrors(t, "bad ports", errs,
		"spec.ports[0].port: FieldValueInvalid", "spec.ports[0].targetPort: FieldValueInvalid",
		"spec.ports[1].name: FieldValueDuplicate", "spec.ports[1].nodePort: FieldValueForbidden")
	registrytest.ExpectMessage(t, errs, "spec.ports[0].port", "must be between 1 and 65535, inclusive")

	svc = service("two", corev1.ServicePort{Port: 80}, corev1.ServicePort{Port: 81})
	registrytest.ExpectErrors(t, "unnamed ports", registrytest.CreateSteps(ServiceRules, svc), "spec.ports[0].name: FieldValueRequired", "spec.ports[1].name: FieldValueRequired")

	svc = service("Web_1", corev1.ServicePort{Port: 80})
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "300.1.1.1", []string{"300.1.1.1"}
	// As kube-apiserver: a bad cluster IP stops validation before the name is looked at.
	registrytest.ExpectErrors(t, "bad name and IP", registrytest.CreateSteps(ServiceRules, svc), "spec.clusterIPs[0]: FieldValueInvalid")

	svc = service("ext")
	svc.Spec.Type, svc.Spec.ClusterIP = corev1.ServiceTypeExternalName, "10.96.0.9"
	registrytest.ExpectErrors(t, "external name", registrytest.CreateSteps(ServiceRules, svc), "spec.clusterIPs: FieldValueForbidden", "spec.externalName: FieldValueRequired")

	headless := service("db")
	headless.Spec.ClusterIP, headless.Spec.ClusterIPs = corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
	registrytest.ExpectErrors(t, "headless without ports", registrytest.CreateSteps(ServiceRules, headless))
	registrytest.ExpectErrors(t, "no ports", registrytest.CreateSteps(ServiceRules, service("none")), "spec.ports: FieldValueRequired")

	bogus := service("bogus", corev1.ServicePort{Port: 80})
	bogus.Spec.Type = "Bogus"
	registrytest.ExpectMessage(t, registrytest.CreateSteps(ServiceRules, bogus), "spec.type",
		`Unsupported value: "Bogus": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"`)
	bogus = service("bogus", corev1.ServicePort{Port: 80, Protocol: "Bogus"})
	bogus.Spec.SessionAffinity = "Bogus"
	errs = registrytest.CreateSteps(ServiceRules, bogus)
	registrytest.ExpectMessage(t, errs, "spec.ports[0].protocol", `supported values: "SCTP", "TCP", "UDP"`)
	registrytest.ExpectMessage(t, errs, "spec.sessionAffinity", `supported values: "ClientIP", "None"`)
}

// TestServiceIPFamilyErrorsStopValidation: as kube-apiserver, which checks the IP family
// fields while allocating, before validating the rest, a wrong ipFamilyPolicy, ipFamilies
// or clusterIPs is all that is reported (in kube's words and order, as the real server
// printed them); an ExternalName service is only told the fields may not be set.
func TestServiceIPFamilyErrorsStopValidation(t *testing.T) {
	const badPolicy = `spec.ipFamilyPolicy: Unsupported value: "Foo": supported values: "PreferDualStack", "RequireDualStack", "SingleStack"`
	for _, tc := range []struct {
		name string
		edit func(s *corev1.ServiceSpec)
		want []string
	}{
		{"policy", func(s *corev1.ServiceSpec) { s.IPFamilyPolicy = ptr.To[corev1.IPFamilyPolicy]("Foo") }, []string{badPolicy}},
		{"policy and type", func(s *corev1.ServiceSpec) {
			s.Type, s.IPFamilyPolicy = "Foo", ptr.To[corev1.IPFamilyPolicy]("Foo")
		}, []string{badPolicy}},
		{"families, IPs and policy", func(s *corev1.ServiceSpec) {
			s.IPFamilyPolicy, s.IPFamilies, s.ClusterIPs = ptr.To[corev1.IPFamilyPolicy]("Foo"), []corev1.IPFamily{"IPv4", "IPv4", "Bar"}, []string{"10.0.0.5", "1.2.3.4"}
		}, []string{
			`spec.clusterIPs: Invalid value: ["10.0.0.5","1.2.3.4"]: must be empty when ` + "`clusterIP`" + ` is not specified`,
			`spec.ipFamilies[1]: Duplicate value: "IPv4"`,
			`spec.ipFamilies[2]: Unsupported value: "Bar": supported values: "IPv4", "IPv6"`,
			badPolicy,
			`spec.clusterIPs: Invalid value: ["10.0.0.5","1.2.3.4"]: may specify no more than one IP for each IP family`,
		}},
		{"single stack, two families", func(s *corev1.ServiceSpec) {
			s.IPFamilyPolicy, s.IPFamilies = ptr.To(corev1.IPFamilyPolicySingleStack), []corev1.IPFamily{"IPv4", "IPv6"}
		}, []string{`spec.ipFamilyPolicy: Invalid value: "SingleStack": must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified`}},
		{"external name", func(s *corev1.ServiceSpec) {
			s.Type, s.ExternalName, s.IPFamilyPolicy = corev1.ServiceTypeExternalName, "foo.com", ptr.To[corev1.IPFamilyPolicy]("Foo")
			s.Ports, s.SessionAffinity = []corev1.ServicePort{{Port: 80}}, corev1.ServiceAffinityNone
		}, []string{`spec.ipFamilyPolicy: Forbidden: may not be set for ExternalName services`}},
	} {
		svc := service("web", corev1.ServicePort{Port: 0})
		svc.Spec.SessionAffinity = "Bad"
		tc.edit(&svc.Spec)
		var got []string
		for _, e := range registrytest.CreateSteps(ServiceRules, svc) {
			got = append(got, e.Error())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: errors\n%q, want\n%q", tc.name, got, tc.want)
		}
	}
}

func newRanges(t *testing.T, cidr string) allocator.Ranges {
	t.Helper()
	ranges, err := allocator.NewRanges(storetest.Bolt(t), netip.MustParsePrefix(cidr), allocator.PortSpan{Base: 30000, Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	return ranges
}

// create runs the claim and the create steps, as the API server does before storing.
func createService(t *testing.T, ranges allocator.Ranges, svc *corev1.Service) error {
	t.Helper()
	if _, err := ServiceRules.Claim(context.Background(), ranges, svc, nil); err != nil {
		return err
	}
	if errs := registrytest.CreateSteps(ServiceRules, svc); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return nil
}

func TestServiceClaims(t *testing.T) {
	ctx := context.Background()
	ranges := newRanges(t, "10.0.0.0/24")

	web := service("web", corev1.ServicePort{Name: "dns-tcp", Port: 53}, corev1.ServicePort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, corev1.ServicePort{Name: "http", Port: 80})
	web.Spec.Type = corev1.ServiceTypeNodePort
	if err := createService(t, ranges, web); err != nil {
		t.Fatal(err)
	}
	s := web.Spec
	if !netip.MustParsePrefix("10.0.0.0/24").Contains(netip.MustParseAddr(s.ClusterIP)) || len(s.ClusterIPs) != 1 || s.ClusterIPs[0] != s.ClusterIP ||
		s.IPFamilies[0] != corev1.IPv4Protocol || *s.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
		t.Errorf("cluster IP fields: %+v", s)
	}
	if p := s.Ports; p[0].NodePort == 0 || p[0].NodePort != p[1].NodePort || p[2].NodePort == 0 || p[2].NodePort == p[0].NodePort {
		t.Errorf("node ports: 53/TCP and 53/UDP share one, 80 has its own: %+v", p)
	}

	taken := service("taken", corev1.ServicePort{Port: 80, NodePort: s.Ports[2].NodePort})
	taken.Spec.Type, taken.Spec.ClusterIP = corev1.ServiceTypeNodePort, s.ClusterIP
	err := createService(t, ranges, taken)
	expectCause(t, err, "spec.clusterIPs", "provided IP is already allocated")
	taken.Spec.ClusterIP, taken.Spec.ClusterIPs = "", nil
	err = createService(t, ranges, taken)
	expectCause(t, err, "spec.ports[0].nodePort", "provided port is already allocated")

	headless := service("db", corev1.ServicePort{Port: 5432})
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	if err := createService(t, ranges, headless); err != nil || headless.Spec.ClusterIP != corev1.ClusterIPNone || len(holdsOf(headless).ips) != 0 {
		t.Errorf("headless service: %v %+v", err, headless.Spec)
	}
	outside := service("outside", corev1.ServicePort{Port: 80})
	outside.Spec.ClusterIP = "10.1.0.1"
	expectCause(t, createService(t, ranges, outside), "spec.clusterIPs", "the provided network does not match the current range")

	// NodePort to ClusterIP: the node ports go, the cluster IP stays.
	old := web.DeepCopy()
	web.Spec.Type = corev1.ServiceTypeClusterIP
	if errs := registrytest.UpdateSteps(ServiceRules, web, old); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if _, err := ServiceRules.Claim(ctx, ranges, web, old); err != nil {
		t.Fatal(err)
	}
	if err := ServiceRules.Release(ctx, ranges, web, old); err != nil {
		t.Fatal(err)
	}
	if web.Spec.Ports[0].NodePort != 0 || web.Spec.ClusterIP != old.Spec.ClusterIP {
		t.Errorf("after the type change: %+v", web.Spec)
	}
	if err := ranges.NodePorts.Allocate(ctx, int(old.Spec.Ports[2].NodePort), serviceOwner(service("next"))); err != nil {
		t.Errorf("node port %d should be free after the type change: %v", old.Spec.Ports[2].NodePort, err)
	}
	// Deletion gives the cluster IP back.
	if err := ServiceRules.Release(ctx, ranges, nil, web); err != nil {
		t.Fatal(err)
	}
	if err := ranges.ServiceIPs.Allocate(ctx, netip.MustParseAddr(web.Spec.ClusterIP), serviceOwner(service("next"))); err != nil {
		t.Errorf("cluster IP should be free after the delete: %v", err)
	}
}

func TestServiceUpdateKeepsAllocatedValues(t *testing.T) {
	ranges := newRanges(t, "10.0.0.0/24")
	old := service("web", corev1.ServicePort{Name: "http", Port: 80})
	old.Spec.Type = corev1.ServiceTypeNodePort
	if err := createService(t, ranges, old); err != nil {
		t.Fatal(err)
	}
	// The YAML it was created from, applied again: no cluster IP, no node port.
	again := service("web", corev1.ServicePort{Name: "http", Port: 80})
	again.Spec.Type = corev1.ServiceTypeNodePort
	if errs := registrytest.UpdateSteps(ServiceRules, again, old); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if again.Spec.ClusterIP != old.Spec.ClusterIP || again.Spec.Ports[0].NodePort != old.Spec.Ports[0].NodePort || len(again.Spec.IPFamilies) != 1 {
		t.Errorf("allocated values not carried over: %+v", again.Spec)
	}
}

// An update's errors as kube-apiserver v1.36 lists them: the IP fields alone when they
// disagree (its allocator checks them before validation), else the metadata, what may not
// change, then the spec in validateService's order.
func TestServiceUpdateErrorsAsKubernetes(t *testing.T) {
	ranges := newRanges(t, "10.0.0.0/24")
	old := service("web", corev1.ServicePort{Name: "http", Port: 80})
	old.Spec.ClusterIP = "10.0.0.10"
	if err := createService(t, ranges, old); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*corev1.Service)
		want []string
	}{
		{"moved", func(svc *corev1.Service) {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "10.0.0.77", []string{"10.0.0.77"}
		},
			[]string{`spec.clusterIPs[0]: Invalid value: ["10.0.0.77"]: may not change once set`}},
		{"plural only, to another family", func(svc *corev1.Service) {
			svc.Spec.ClusterIPs, svc.Spec.IPFamilies = []string{"10.0.0.77"}, []corev1.IPFamily{corev1.IPv6Protocol}
		}, []string{
			`spec.clusterIPs: Invalid value: ["10.0.0.77"]: first value must match ` + "`clusterIP`",
			`spec.clusterIPs[0]: Invalid value: "10.0.0.77": expected an IPv6 value as indicated by ` + "`ipFamilies[0]`",
		}},
		{"moved, with bad labels, selector and affinity", func(svc *corev1.Service) {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "10.0.0.77", []string{"10.0.0.77"}
			svc.Labels, svc.Spec.Selector, svc.Spec.SessionAffinity = map[string]string{"b": "-"}, map[string]string{"a": "-x-"}, "Bad"
		}, []string{
			`metadata.labels: Invalid value: "-": `,
			`spec.clusterIPs[0]: Invalid value: ["10.0.0.77"]: may not change once set`,
			`spec.selector: Invalid value: "-x-": `,
			`spec.sessionAffinity: Unsupported value: "Bad": supported values: "ClientIP", "None"`,
		}},
		{"both cleared, as an old client that never sent them: kept", func(svc *corev1.Service) {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil
		}, nil},
	} {
		svc := old.DeepCopy()
		tc.edit(svc)
		errs := registrytest.UpdateSteps(ServiceRules, svc, old)
		if len(errs) != len(tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, errs, tc.want)
			continue
		}
		for i, e := range errs {
			if !strings.HasPrefix(e.Error(), tc.want[i]) {
				t.Errorf("%s: error %d is %q, want %q", tc.name, i, e.Error(), tc.want[i])
			}
		}
	}
}

// A Service's create errors in kube's order: each port's own, selector, affinity,
// external IPs, type, then node ports forbidden on ClusterIP and duplicates.
func TestServiceCreateErrorOrder(t *testing.T) {
	svc := service("web", corev1.ServicePort{Name: "a", Port: 80, NodePort: 30001}, corev1.ServicePort{Name: "b", Port: 80, NodePort: 30001}, corev1.ServicePort{Name: "c"})
	svc.Spec.Selector, svc.Spec.SessionAffinity, svc.Spec.ExternalIPs = map[string]string{"a": "-"}, "Bad", []string{"1.2.3"}
	want := []string{
		"spec.ports[2].port: Invalid value: 0: ",
		"spec.ports[2].targetPort: Invalid value: 0: ",
		`spec.selector: Invalid value: "-": `,
		`spec.sessionAffinity: Unsupported value: "Bad"`,
		`spec.externalIPs[0]: Invalid value: "1.2.3": must be a valid IP address`,
		"spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
		"spec.ports[1].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
		"spec.ports[1].nodePort: Duplicate value: 30001",
		`spec.ports[1]: Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,"TargetPort":0,"NodePort":0}`,
	}
	errs := registrytest.CreateSteps(ServiceRules, svc)
	if len(errs) != len(want) {
		t.Fatalf("got %v, want %q", errs, want)
	}
	for i, e := range errs {
		if !strings.HasPrefix(e.Error(), want[i]) {
			t.Errorf("error %d is %q, want %q", i, e.Error(), want[i])
		}
	}
	// kube stores an ExternalName Service's node ports, never allocating them.
	external := service("ext", corev1.ServicePort{Port: 80, NodePort: 30005})
	external.Spec.Type, external.Spec.ExternalName, external.Spec.Selector = corev1.ServiceTypeExternalName, "foo.example.com", nil
	if errs := registrytest.CreateSteps(ServiceRules, external); len(errs) > 0 {
		t.Errorf("ExternalName with a node port: %v", errs)
	}
}

// expectCause checks that err is a 422 with a cause on fieldPath saying msg.
func expectCause(t *testing.T, err error, fieldPath, msg string) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) || status.Status().Details == nil {
		t.Errorf("want 422 on %s saying %q, got %v", fieldPath, msg, err)
		return
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == fieldPath && strings.Contains(c.Message, msg) {
			return
		}
	}
	t.Errorf("no cause on %s saying %q in %v", fieldPath, msg, err)
}

// The warnings kube-apiserver sends on a Service's create and update
// (pkg/api/service/warnings.go), in its order and words.
func TestServiceWarningsAsKubernetes(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*corev1.Service)
		want []string
	}{
		{"plain", func(*corev1.Service) {}, nil},
		{"external IPs", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"192.0.2.9"} },
			[]string{"spec.externalIPs is deprecated and may no longer be implemented in some clusters"}},
		{"headless", func(s *corev1.Service) {
			s.Spec.ClusterIP, s.Spec.LoadBalancerIP, s.Spec.ExternalIPs, s.Spec.SessionAffinity = corev1.ClusterIPNone, "192.0.2.8", []string{"192.0.2.9"}, corev1.ServiceAffinityClientIP
		}, []string{"spec.loadBalancerIP is ignored for headless services", "spec.externalIPs is ignored for headless services",
			"spec.SessionAffinity is ignored for headless services"}},
		{"addresses with leading zeros", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalIPs, s.Spec.LoadBalancerSourceRanges = corev1.ServiceTypeLoadBalancer, []string{"192.0.2.09"}, []string{"10.0.0.1/8"}
		}, []string{
			`spec.externalIPs[0]: non-standard IP address "192.0.2.09" is invalid: use "192.0.2.9"`,
			"spec.externalIPs is deprecated and may no longer be implemented in some clusters",
			`spec.loadBalancerSourceRanges[0]: CIDR value "10.0.0.1/8" is ambiguous in this context (should be "10.0.0.0/8" or "10.0.0.1/32"?)`}},
		{"external name", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalName, s.Spec.ExternalIPs, s.Spec.Selector = corev1.ServiceTypeExternalName, "example.com", []string{"192.0.2.9"}, nil
		}, []string{`spec.externalIPs is ignored when spec.type is "ExternalName"`}},
		{"external name of a ClusterIP", func(s *corev1.Service) { s.Spec.ExternalName = "example.com" },
			[]string{`spec.externalName is ignored when spec.type is not "ExternalName"`}},
		{"topology", func(s *corev1.Service) {
			s.Annotations = map[string]string{corev1.DeprecatedAnnotationTopologyAwareHints: "auto"}
			s.Spec.TrafficDistribution = ptr.To(corev1.ServiceTrafficDistributionPreferClose)
		}, []string{"annotation service.kubernetes.io/topology-aware-hints is deprecated, please use service.kubernetes.io/topology-mode instead",
			`spec.trafficDistribution: "PreferClose" is deprecated; use "PreferSameZone"`}},
	} {
		svc := service("web", corev1.ServicePort{Port: 80})
		tc.edit(svc)
		ServiceRules.Default(svc)
		if got := ServiceRules.Warnings(svc, nil); !slices.Equal(got, tc.want) {
			t.Errorf("%s: warnings\n%q\nwant\n%q", tc.name, got, tc.want)
		}
	}
}

// TestServiceUpdateToSingleStack: a headless selectorless service holds both families; an
// update asking for SingleStack that leaves them as they were keeps the primary one, as
// kube's allocator does, rather than being refused for naming two families.
func TestServiceUpdateToSingleStack(t *testing.T) {
	ranges := newRanges(t, "10.0.0.0/24")
	old := service("db")
	old.Spec.ClusterIP, old.Spec.Selector = corev1.ClusterIPNone, nil
	if err := createService(t, ranges, old); err != nil {
		t.Fatal(err)
	}
	if len(old.Spec.IPFamilies) != 2 {
		t.Fatalf("headless selectorless service has families %v, want both", old.Spec.IPFamilies)
	}
	single := old.DeepCopy()
	single.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	if errs := registrytest.UpdateSteps(ServiceRules, single, old); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if !slices.Equal(single.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol}) {
		t.Errorf("families %v, want [IPv4]", single.Spec.IPFamilies)
	}
}

// Type changes as kube-apiserver v1.36 shows them: an ExternalName Service turned
// ClusterIP with only the singular clusterIP gets it in clusterIPs too (normalizeClusterIPs),
// and an ExternalName Service, created so or turned so, shows no internalTrafficPolicy
// (kube drops it when it reads one).
func TestServiceTypeChangesAsKubernetes(t *testing.T) {
	ranges := newRanges(t, "10.0.0.0/24")
	external := func(name string) *corev1.Service {
		svc := service(name)
		svc.Spec.Selector = nil
		svc.Spec.Type, svc.Spec.ExternalName = corev1.ServiceTypeExternalName, "db.example.invalid"
		return svc
	}
	created := external("db")
	created.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
	if err := createService(t, ranges, created); err != nil || created.Spec.InternalTrafficPolicy != nil {
		t.Errorf("ExternalName created with internalTrafficPolicy: %v, %v", err, created.Spec.InternalTrafficPolicy)
	}

	old := created.DeepCopy()
	web := old.DeepCopy()
	web.Spec.Type, web.Spec.ExternalName, web.Spec.ClusterIP = corev1.ServiceTypeClusterIP, "", "10.0.0.20"
	web.Spec.Ports = []corev1.ServicePort{{Port: 80}}
	ServiceRules.PrepareUpdate(web, old)
	ServiceRules.Default(web)
	if _, err := ServiceRules.Claim(context.Background(), ranges, web, old); err != nil {
		t.Fatal(err)
	}
	if errs := registrytest.UpdateSteps(ServiceRules, web, old); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if !slices.Equal(web.Spec.ClusterIPs, []string{"10.0.0.20"}) || *web.Spec.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster {
		t.Errorf("ExternalName turned ClusterIP with clusterIP alone: %+v", web.Spec)
	}
	if err := ranges.ServiceIPs.Allocate(context.Background(), netip.MustParseAddr("10.0.0.20"), serviceOwner(service("next"))); err == nil {
		t.Error("the cluster IP asked for was not claimed")
	}

	back := web.DeepCopy()
	back.Spec.Type, back.Spec.ExternalName = corev1.ServiceTypeExternalName, "db.example.invalid"
	if errs := registrytest.UpdateSteps(ServiceRules, back, web); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if back.Spec.InternalTrafficPolicy != nil || back.Spec.ClusterIP != "" {
		t.Errorf("ClusterIP turned ExternalName: %+v", back.Spec)
	}
}

// loadBalancerSourceRanges (or, without them, the legacy annotation) are CIDRs, only on a
// LoadBalancer, as kube-apiserver v1.36.3 validates them (the field's path has kube's
// historical capital; values may be space-padded; an update keeps the invalid ones it had).
func TestServiceSourceRanges(t *testing.T) {
	lb := func(ranges ...string) *corev1.Service {
		s := service("lb", corev1.ServicePort{Port: 80})
		s.Spec.Type, s.Spec.LoadBalancerSourceRanges = corev1.ServiceTypeLoadBalancer, ranges
		return s
	}
	errs := registrytest.CreateSteps(ServiceRules, lb(" 10.0.0.0/8 ", "10.0.0.1/8", "abc"))
	registrytest.ExpectErrors(t, "bad ranges", errs, "spec.LoadBalancerSourceRanges[1]: FieldValueInvalid", "spec.LoadBalancerSourceRanges[2]: FieldValueInvalid")
	registrytest.ExpectMessage(t, errs, "spec.LoadBalancerSourceRanges[1]", "must not have bits set beyond the prefix length")
	registrytest.ExpectMessage(t, errs, "spec.LoadBalancerSourceRanges[2]", "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")

	clusterIP := service("cip", corev1.ServicePort{Port: 80})
	clusterIP.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
	registrytest.ExpectErrors(t, "ranges of a ClusterIP service", registrytest.CreateSteps(ServiceRules, clusterIP), "spec.LoadBalancerSourceRanges: FieldValueForbidden")

	annotated := service("ann", corev1.ServicePort{Port: 80})
	annotated.Annotations = map[string]string{corev1.AnnotationLoadBalancerSourceRangesKey: " 10.0.0.0/8, bad"}
	key := "metadata.annotations[" + corev1.AnnotationLoadBalancerSourceRangesKey + "]"
	registrytest.ExpectErrors(t, "annotation of a ClusterIP service", registrytest.CreateSteps(ServiceRules, annotated), key+": FieldValueForbidden", key+": FieldValueInvalid")

	old := lb("10.0.0.1/8")
	ServiceRules.Default(old)
	updated := old.DeepCopy()
	updated.Labels = map[string]string{"a": "b"}
	registrytest.ExpectErrors(t, "an update keeping an invalid range", ServiceRules.ValidateUpdate(updated, old))
}
