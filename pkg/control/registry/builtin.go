package registry

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// Builtin returns the registry of every resource miniapi serves, with the short names and
// categories Kubernetes gives them (`kubectl get all` lists the "all" category).
func Builtin() (*Registry, error) {
	core := schema.GroupVersion{Version: "v1"}
	all := []string{"all"}
	// autoscaling/v2 first: the first version of a group is its preferred one.
	hpa := res(autoscalingv2.SchemeGroupVersion, "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, hpaRules, []string{"hpa"}, all, "status")
	hpaV1 := res(autoscalingv1.SchemeGroupVersion, "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, hpaV1Rules, []string{"hpa"}, all, "status")
	hpaV1.Conversion = hpaV1Conversion(hpa)
	coreEvents := res(core, "events", "Event", true, eventRules, []string{"ev"}, nil)
	events := res(eventsv1.SchemeGroupVersion, "events", "Event", true, eventsV1Rules, []string{"ev"}, nil)
	events.Conversion = eventsV1Conversion(coreEvents)
	return New(
		res(core, "namespaces", "Namespace", false, namespaceRules, []string{"ns"}, nil, "status", "finalize"),
		res(core, "nodes", "Node", false, nodeRules, []string{"no"}, nil, "status"),
		componentStatuses(),
		res(core, "pods", "Pod", true, podRules, []string{"po"}, all, "status", "binding", "eviction", "ephemeralcontainers", "resize"),
		res(core, "services", "Service", true, serviceRules, []string{"svc"}, all, "status"),
		res(core, "endpoints", "Endpoints", true, endpointsRules, []string{"ep"}, nil),
		res(core, "configmaps", "ConfigMap", true, configMapRules, []string{"cm"}, nil),
		res(core, "secrets", "Secret", true, secretRules, nil, nil),
		res(core, "serviceaccounts", "ServiceAccount", true, serviceAccountRules, []string{"sa"}, nil),
		coreEvents,
		res(core, "limitranges", "LimitRange", true, limitRangeRules, []string{"limits"}, nil),
		res(core, "resourcequotas", "ResourceQuota", true, resourceQuotaRules, []string{"quota"}, nil, "status"),
		res(core, "persistentvolumes", "PersistentVolume", false, persistentVolumeRules, []string{"pv"}, nil, "status"),
		res(core, "persistentvolumeclaims", "PersistentVolumeClaim", true, persistentVolumeClaimRules, []string{"pvc"}, nil, "status"),
		res(core, "podtemplates", "PodTemplate", true, podTemplateRules, nil, nil),
		res(core, "replicationcontrollers", "ReplicationController", true, replicationControllerRules, []string{"rc"}, all, "scale", "status"),
		res(appsv1.SchemeGroupVersion, "deployments", "Deployment", true, deploymentRules, []string{"deploy"}, all, "scale", "status"),
		res(appsv1.SchemeGroupVersion, "replicasets", "ReplicaSet", true, replicaSetRules, []string{"rs"}, all, "scale", "status"),
		res(appsv1.SchemeGroupVersion, "statefulsets", "StatefulSet", true, statefulSetRules, []string{"sts"}, all, "scale", "status"),
		res(appsv1.SchemeGroupVersion, "daemonsets", "DaemonSet", true, daemonSetRules, []string{"ds"}, all, "status"),
		res(appsv1.SchemeGroupVersion, "controllerrevisions", "ControllerRevision", true, controllerRevisionRules, nil, nil),
		events,
		res(batchv1.SchemeGroupVersion, "jobs", "Job", true, jobRules, nil, all, "status"),
		res(batchv1.SchemeGroupVersion, "cronjobs", "CronJob", true, cronJobRules, []string{"cj"}, all, "status"),
		hpa, hpaV1,
		res(policyv1.SchemeGroupVersion, "poddisruptionbudgets", "PodDisruptionBudget", true, podDisruptionBudgetRules, []string{"pdb"}, nil, "status"),
		res(rbacv1.SchemeGroupVersion, "clusterrolebindings", "ClusterRoleBinding", false, clusterRoleBindingRules, nil, nil),
		res(rbacv1.SchemeGroupVersion, "clusterroles", "ClusterRole", false, clusterRoleRules, nil, nil),
		res(rbacv1.SchemeGroupVersion, "rolebindings", "RoleBinding", true, roleBindingRules, nil, nil),
		res(rbacv1.SchemeGroupVersion, "roles", "Role", true, roleRules, nil, nil),
		res(schedulingv1.SchemeGroupVersion, "priorityclasses", "PriorityClass", false, priorityClassRules, []string{"pc"}, nil),
		res(storagev1.SchemeGroupVersion, "storageclasses", "StorageClass", false, storageClassRules, []string{"sc"}, nil),
		res(storagev1.SchemeGroupVersion, "csinodes", "CSINode", false, csiNodeRules, nil, nil),
		res(storagev1.SchemeGroupVersion, "csidrivers", "CSIDriver", false, csiDriverRules, nil, nil),
		res(storagev1.SchemeGroupVersion, "volumeattachments", "VolumeAttachment", false, volumeAttachmentRules, nil, nil, "status"),
		res(storagev1.SchemeGroupVersion, "csistoragecapacities", "CSIStorageCapacity", true, csiStorageCapacityRules, nil, nil),
		res(storagev1.SchemeGroupVersion, "volumeattributesclasses", "VolumeAttributesClass", false, volumeAttributesClassRules, []string{"vac"}, nil),
		res(nodev1.SchemeGroupVersion, "runtimeclasses", "RuntimeClass", false, runtimeClassRules, nil, nil),
		res(resourcev1.SchemeGroupVersion, "deviceclasses", "DeviceClass", false, deviceClassRules, nil, nil),
		res(resourcev1.SchemeGroupVersion, "resourceclaims", "ResourceClaim", true, resourceClaimRules, nil, nil, "status"),
		res(resourcev1.SchemeGroupVersion, "resourceclaimtemplates", "ResourceClaimTemplate", true, resourceClaimTemplateRules, nil, nil),
		res(resourcev1.SchemeGroupVersion, "resourceslices", "ResourceSlice", false, resourceSliceRules, nil, nil),
		res(coordinationv1.SchemeGroupVersion, "leases", "Lease", true, leaseRules, nil, nil),
		res(discoveryv1.SchemeGroupVersion, "endpointslices", "EndpointSlice", true, endpointSliceRules, nil, nil),
		res(certificatesv1.SchemeGroupVersion, "certificatesigningrequests", "CertificateSigningRequest", false, csrRules, []string{"csr"}, nil, "status", "approval"),
		res(networkingv1.SchemeGroupVersion, "networkpolicies", "NetworkPolicy", true, networkPolicyRules, []string{"netpol"}, nil),
		res(networkingv1.SchemeGroupVersion, "ingresses", "Ingress", true, ingressRules, []string{"ing"}, nil, "status"),
		res(networkingv1.SchemeGroupVersion, "ingressclasses", "IngressClass", false, ingressClassRules, nil, nil),
		res(networkingv1.SchemeGroupVersion, "servicecidrs", "ServiceCIDR", false, serviceCIDRRules, nil, nil, "status"),
		res(networkingv1.SchemeGroupVersion, "ipaddresses", "IPAddress", false, ipAddressRules, []string{"ip"}, nil),
		res(flowcontrolv1.SchemeGroupVersion, "flowschemas", "FlowSchema", false, flowSchemaRules, nil, nil, "status"),
		res(flowcontrolv1.SchemeGroupVersion, "prioritylevelconfigurations", "PriorityLevelConfiguration", false, priorityLevelRules, nil, nil, "status"),
		res(apiextensionsv1.SchemeGroupVersion, "customresourcedefinitions", "CustomResourceDefinition", false, customResourceDefinitionRules, []string{"crd", "crds"}, []string{"api-extensions"}, "status"),
		res(admissionregistrationv1.SchemeGroupVersion, "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", false, mutatingWebhookConfigurationRules, nil, []string{"api-extensions"}),
		res(admissionregistrationv1.SchemeGroupVersion, "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", false, validatingWebhookConfigurationRules, nil, []string{"api-extensions"}),
		res(admissionregistrationv1.SchemeGroupVersion, "validatingadmissionpolicies", "ValidatingAdmissionPolicy", false, validatingAdmissionPolicyRules, nil, []string{"api-extensions"}, "status"),
		res(admissionregistrationv1.SchemeGroupVersion, "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", false, validatingAdmissionPolicyBindingRules, nil, []string{"api-extensions"}),
		res(admissionregistrationv1.SchemeGroupVersion, "mutatingadmissionpolicies", "MutatingAdmissionPolicy", false, mutatingAdmissionPolicyRules, nil, []string{"api-extensions"}),
		res(admissionregistrationv1.SchemeGroupVersion, "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", false, mutatingAdmissionPolicyBindingRules, nil, []string{"api-extensions"}),
		res(apiregistrationv1.SchemeGroupVersion, "apiservices", "APIService", false, apiServiceRules, nil, []string{"api-extensions"}, "status"),
	)
}

func res(gv schema.GroupVersion, plural, kind string, namespaced bool, rules Rules, shortNames, categories []string, sub ...string) *Resource {
	return &Resource{
		GroupVersionResource: gv.WithResource(plural),
		Kind:                 kind,
		Singular:             strings.ToLower(kind),
		Namespaced:           namespaced,
		ShortNames:           shortNames,
		Categories:           categories,
		Subresources:         sub,
		Rules:                rules,
	}
}

var leaseRules = Rules{
	Validate: func(obj runtime.Object) field.ErrorList { return validateLease(obj.(*coordinationv1.Lease)) },
	ValidateUpdate: func(obj, _ runtime.Object) field.ErrorList {
		return validateLeaseSpec(&obj.(*coordinationv1.Lease).Spec)
	},
	Table: &TableDef{
		Columns: []metav1.TableColumnDefinition{
			nameColumn, column("Holder", "string", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"], false), ageColumn,
		},
		Row: func(obj runtime.Object) []any {
			l := obj.(*coordinationv1.Lease)
			return []any{l.Name, stringOr(l.Spec.HolderIdentity, ""), Age(l.CreationTimestamp)}
		},
	},
}

// ScaleTable is what `kubectl get --subresource=scale` shows of an autoscaling/v1 Scale.
var ScaleTable = &TableDef{
	Columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		integerColumn("Desired", autoscalingv1.ScaleSpec{}.SwaggerDoc()["replicas"]),
		integerColumn("Available", autoscalingv1.ScaleStatus{}.SwaggerDoc()["replicas"]),
		ageColumn,
	},
	Row: func(obj runtime.Object) []any {
		s := obj.(*autoscalingv1.Scale)
		return []any{s.Name, int64(s.Spec.Replicas), int64(s.Status.Replicas), Age(s.CreationTimestamp)}
	},
}
