package core

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

const (
	dns1123Label      = `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`
	dns1123Subdomain  = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
	qualifiedNamePart = `name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`
	labelValue        = `a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`
)

// TestEndpointSliceValidationAsKube: kube-apiserver v1.36.3's answers (side by side with
// the real kubectl), in its order: the address type, the ports (no check of the number),
// then the endpoints with their node names and hints.
func TestEndpointSliceValidationAsKube(t *testing.T) {
	s := &discoveryv1.EndpointSlice{ObjectMeta: registrytest.ObjMeta("es"),
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.1"}, NodeName: ptr.To("Bad_Node"), Hostname: ptr.To("H"),
			Hints: &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "z!"}, {Name: "z!"}}, ForNodes: []discoveryv1.ForNode{{Name: "N_1"}}}}},
		Ports: []discoveryv1.EndpointPort{{Port: ptr.To[int32](70000)}, {AppProtocol: ptr.To("bad proto!"), Protocol: ptr.To[corev1.Protocol]("X")},
			{Name: ptr.To("a")}, {Name: ptr.To("a")}}}
	registrytest.ExpectMessages(t, "slice", registrytest.CreateSteps(EndpointSliceRules, s),
		`addressType: Required value`,
		`ports[1].name: Duplicate value: ""`,
		`ports[1].protocol: Unsupported value: "X": supported values: "SCTP", "TCP", "UDP"`,
		`ports[1].appProtocol: Invalid value: "bad proto!": `+qualifiedNamePart,
		`ports[3].name: Duplicate value: "a"`,
		`endpoints[0].nodeName: Invalid value: "Bad_Node": `+dns1123Subdomain,
		`endpoints[0].hostname: Invalid value: "H": `+dns1123Label,
		`endpoints[0].hints.forZones[0].name: Invalid value: "z!": `+labelValue,
		`endpoints[0].hints.forZones[1].name: Duplicate value: "z!"`,
		`endpoints[0].hints.forZones[1].name: Invalid value: "z!": `+labelValue,
		`endpoints[0].hints.forNodes[0].name: Invalid value: "N_1": `+dns1123Subdomain)

	// An unknown address type leaves the addresses unchecked.
	s = &discoveryv1.EndpointSlice{ObjectMeta: registrytest.ObjMeta("es"), AddressType: "Bad",
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"x"}}}}
	registrytest.ExpectMessages(t, "unknown address type", registrytest.CreateSteps(EndpointSliceRules, s),
		`addressType: Unsupported value: "Bad": supported values: "FQDN", "IPv4", "IPv6"`)

	// Writes through v1 drop deprecatedTopology, so its keys are not checked.
	s = &discoveryv1.EndpointSlice{ObjectMeta: registrytest.ObjMeta("es"), AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.1"},
			DeprecatedTopology: map[string]string{corev1.LabelHostname: "n1", "bad key!": "v"}}}}
	registrytest.ExpectMessages(t, "deprecatedTopology", registrytest.CreateSteps(EndpointSliceRules, s))
	if s.Endpoints[0].DeprecatedTopology != nil {
		t.Errorf("deprecatedTopology kept on create: %v", s.Endpoints[0].DeprecatedTopology)
	}

	// An update that leaves the endpoints as stored keeps them (and their deprecatedTopology)
	// even where they are now invalid; one that changes them drops the topology, taking the
	// node name it held before into nodeName.
	old := &discoveryv1.EndpointSlice{ObjectMeta: registrytest.ObjMeta("es"), AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, DeprecatedTopology: map[string]string{corev1.LabelHostname: "n1"}}}}
	same := old.DeepCopy()
	same.Labels = map[string]string{"a": "b"}
	registrytest.ExpectMessages(t, "unchanged endpoints", registrytest.UpdateSteps(EndpointSliceRules, same, old))
	if same.Endpoints[0].DeprecatedTopology == nil {
		t.Error("deprecatedTopology dropped from unchanged endpoints")
	}
	moved := old.DeepCopy()
	moved.Endpoints[0].Addresses = []string{"192.0.2.2"}
	registrytest.ExpectMessages(t, "changed endpoints", registrytest.UpdateSteps(EndpointSliceRules, moved, old))
	if e := moved.Endpoints[0]; e.DeprecatedTopology != nil || e.NodeName == nil || *e.NodeName != "n1" {
		t.Errorf("changed endpoints: deprecatedTopology %v, nodeName %v; want none and n1", e.DeprecatedTopology, e.NodeName)
	}
}

// TestEndpointsValidationAsKube: kube-apiserver v1.36.3's answers, in its order: an
// address's IP as a legacy field, its hostname and node name, then its range (which names
// an IP that does not parse a second time); a port's appProtocol.
func TestEndpointsValidationAsKube(t *testing.T) {
	ep := &corev1.Endpoints{ObjectMeta: registrytest.ObjMeta("e"), Subsets: []corev1.EndpointSubset{{
		NotReadyAddresses: []corev1.EndpointAddress{{IP: "bad", Hostname: "H_1", NodeName: ptr.To("N_1")}, {IP: "0.0.0.0"}},
		Ports:             []corev1.EndpointPort{{Port: 1, AppProtocol: ptr.To("bad proto!")}, {Port: 2, Name: "a"}},
	}, {}}}
	registrytest.ExpectMessages(t, "endpoints", registrytest.CreateSteps(EndpointsRules, ep),
		`subsets[0].notReadyAddresses[0].ip: Invalid value: "bad": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
		`subsets[0].notReadyAddresses[0].hostname: Invalid value: "H_1": `+dns1123Label,
		`subsets[0].notReadyAddresses[0].nodeName: Invalid value: "N_1": `+dns1123Subdomain,
		`subsets[0].notReadyAddresses[0].ip: Invalid value: "bad": must be a valid IP address`,
		`subsets[0].notReadyAddresses[1].ip: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)`,
		`subsets[0].ports[0].name: Required value`,
		`subsets[0].ports[0].appProtocol: Invalid value: "bad proto!": `+qualifiedNamePart,
		"subsets[1]: Required value: must specify `addresses` or `notReadyAddresses`")

	// Subsets stored before stay, even where they are now invalid.
	old := &corev1.Endpoints{ObjectMeta: registrytest.ObjMeta("e"), Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: "127.0.0.1"}}, Ports: []corev1.EndpointPort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}}
	same := old.DeepCopy()
	same.Labels = map[string]string{"a": "b"}
	registrytest.ExpectMessages(t, "unchanged subsets", registrytest.UpdateSteps(EndpointsRules, same, old))
}

// TestServicePortAppProtocol: a Service port's appProtocol is a qualified name, as kube's.
func TestServicePortAppProtocol(t *testing.T) {
	svc := service("sap", corev1.ServicePort{Port: 80, AppProtocol: ptr.To("bad proto!")})
	registrytest.ExpectMessages(t, "appProtocol", registrytest.CreateSteps(ServiceRules, svc),
		`spec.ports[0].appProtocol: Invalid value: "bad proto!": `+qualifiedNamePart)
	svc = service("sap", corev1.ServicePort{Port: 80, AppProtocol: ptr.To("kubernetes.io/h2c")})
	registrytest.ExpectMessages(t, "valid appProtocol", registrytest.CreateSteps(ServiceRules, svc))
}
