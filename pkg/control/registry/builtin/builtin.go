// Package builtin assembles the registry of every built-in resource miniapi serves from the
// rules of each API group's package (registry/core, registry/apps, ...), with the names,
// short names, categories and subresources Kubernetes gives them.
package builtin

import (
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/admissionregistration"
	"github.com/minik8s/minik8s/pkg/control/registry/apiextensions"
	"github.com/minik8s/minik8s/pkg/control/registry/apiregistration"
	"github.com/minik8s/minik8s/pkg/control/registry/apps"
	"github.com/minik8s/minik8s/pkg/control/registry/autoscaling"
	"github.com/minik8s/minik8s/pkg/control/registry/batch"
	"github.com/minik8s/minik8s/pkg/control/registry/certificates"
	"github.com/minik8s/minik8s/pkg/control/registry/coordination"
	"github.com/minik8s/minik8s/pkg/control/registry/core"
	"github.com/minik8s/minik8s/pkg/control/registry/flowcontrol"
	"github.com/minik8s/minik8s/pkg/control/registry/networking"
	"github.com/minik8s/minik8s/pkg/control/registry/node"
	"github.com/minik8s/minik8s/pkg/control/registry/policy"
	"github.com/minik8s/minik8s/pkg/control/registry/rbac"
	"github.com/minik8s/minik8s/pkg/control/registry/resource"
	"github.com/minik8s/minik8s/pkg/control/registry/scheduling"
	"github.com/minik8s/minik8s/pkg/control/registry/storage"
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
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// Registry returns the registry of every resource miniapi serves, with the short names and
// categories Kubernetes gives them (`kubectl get all` lists the "all" category).
func Registry() (*registry.Registry, error) {
	legacy := schema.GroupVersion{Version: "v1"}
	all := []string{"all"}
	// autoscaling/v2 first: the first version of a group is its preferred one.
	hpa := registry.NewResource(autoscalingv2.SchemeGroupVersion, "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, autoscaling.HPARules, []string{"hpa"}, all, "status")
	hpaV1 := registry.NewResource(autoscalingv1.SchemeGroupVersion, "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, autoscaling.HPAV1Rules, []string{"hpa"}, all, "status")
	hpaV1.Conversion = autoscaling.HPAV1Conversion(hpa)
	coreEvents := registry.NewResource(legacy, "events", "Event", true, core.EventRules, []string{"ev"}, nil)
	events := registry.NewResource(eventsv1.SchemeGroupVersion, "events", "Event", true, core.EventsV1Rules, []string{"ev"}, nil)
	events.Conversion = core.EventsV1Conversion(coreEvents)
	return registry.New(
		registry.NewResource(legacy, "namespaces", "Namespace", false, core.NamespaceRules, []string{"ns"}, nil, "status", "finalize"),
		registry.NewResource(legacy, "nodes", "Node", false, core.NodeRules, []string{"no"}, nil, "status"),
		core.ComponentStatuses(),
		registry.NewResource(legacy, "pods", "Pod", true, core.PodRules, []string{"po"}, all, "status", "binding", "eviction", "ephemeralcontainers", "resize"),
		registry.NewResource(legacy, "services", "Service", true, core.ServiceRules, []string{"svc"}, all, "status"),
		registry.NewResource(legacy, "endpoints", "Endpoints", true, core.EndpointsRules, []string{"ep"}, nil),
		registry.NewResource(legacy, "configmaps", "ConfigMap", true, core.ConfigMapRules, []string{"cm"}, nil),
		registry.NewResource(legacy, "secrets", "Secret", true, core.SecretRules, nil, nil),
		registry.NewResource(legacy, "serviceaccounts", "ServiceAccount", true, core.ServiceAccountRules, []string{"sa"}, nil),
		coreEvents,
		registry.NewResource(legacy, "limitranges", "LimitRange", true, core.LimitRangeRules, []string{"limits"}, nil),
		registry.NewResource(legacy, "resourcequotas", "ResourceQuota", true, core.ResourceQuotaRules, []string{"quota"}, nil, "status"),
		registry.NewResource(legacy, "persistentvolumes", "PersistentVolume", false, core.PersistentVolumeRules, []string{"pv"}, nil, "status"),
		registry.NewResource(legacy, "persistentvolumeclaims", "PersistentVolumeClaim", true, core.PersistentVolumeClaimRules, []string{"pvc"}, nil, "status"),
		registry.NewResource(legacy, "podtemplates", "PodTemplate", true, core.PodTemplateRules, nil, nil),
		registry.NewResource(legacy, "replicationcontrollers", "ReplicationController", true, core.ReplicationControllerRules, []string{"rc"}, all, "scale", "status"),
		registry.NewResource(appsv1.SchemeGroupVersion, "deployments", "Deployment", true, apps.DeploymentRules, []string{"deploy"}, all, "scale", "status"),
		registry.NewResource(appsv1.SchemeGroupVersion, "replicasets", "ReplicaSet", true, apps.ReplicaSetRules, []string{"rs"}, all, "scale", "status"),
		registry.NewResource(appsv1.SchemeGroupVersion, "statefulsets", "StatefulSet", true, apps.StatefulSetRules, []string{"sts"}, all, "scale", "status"),
		registry.NewResource(appsv1.SchemeGroupVersion, "daemonsets", "DaemonSet", true, apps.DaemonSetRules, []string{"ds"}, all, "status"),
		registry.NewResource(appsv1.SchemeGroupVersion, "controllerrevisions", "ControllerRevision", true, apps.ControllerRevisionRules, nil, nil),
		events,
		registry.NewResource(batchv1.SchemeGroupVersion, "jobs", "Job", true, batch.JobRules, nil, all, "status"),
		registry.NewResource(batchv1.SchemeGroupVersion, "cronjobs", "CronJob", true, batch.CronJobRules, []string{"cj"}, all, "status"),
		hpa, hpaV1,
		registry.NewResource(policyv1.SchemeGroupVersion, "poddisruptionbudgets", "PodDisruptionBudget", true, policy.PodDisruptionBudgetRules, []string{"pdb"}, nil, "status"),
		registry.NewResource(rbacv1.SchemeGroupVersion, "clusterrolebindings", "ClusterRoleBinding", false, rbac.ClusterRoleBindingRules, nil, nil),
		registry.NewResource(rbacv1.SchemeGroupVersion, "clusterroles", "ClusterRole", false, rbac.ClusterRoleRules, nil, nil),
		registry.NewResource(rbacv1.SchemeGroupVersion, "rolebindings", "RoleBinding", true, rbac.RoleBindingRules, nil, nil),
		registry.NewResource(rbacv1.SchemeGroupVersion, "roles", "Role", true, rbac.RoleRules, nil, nil),
		registry.NewResource(schedulingv1.SchemeGroupVersion, "priorityclasses", "PriorityClass", false, scheduling.PriorityClassRules, []string{"pc"}, nil),
		registry.NewResource(storagev1.SchemeGroupVersion, "storageclasses", "StorageClass", false, storage.StorageClassRules, []string{"sc"}, nil),
		registry.NewResource(storagev1.SchemeGroupVersion, "csinodes", "CSINode", false, storage.CSINodeRules, nil, nil),
		registry.NewResource(storagev1.SchemeGroupVersion, "csidrivers", "CSIDriver", false, storage.CSIDriverRules, nil, nil),
		registry.NewResource(storagev1.SchemeGroupVersion, "volumeattachments", "VolumeAttachment", false, storage.VolumeAttachmentRules, nil, nil, "status"),
		registry.NewResource(storagev1.SchemeGroupVersion, "csistoragecapacities", "CSIStorageCapacity", true, storage.CSIStorageCapacityRules, nil, nil),
		registry.NewResource(storagev1.SchemeGroupVersion, "volumeattributesclasses", "VolumeAttributesClass", false, storage.VolumeAttributesClassRules, []string{"vac"}, nil),
		registry.NewResource(nodev1.SchemeGroupVersion, "runtimeclasses", "RuntimeClass", false, node.RuntimeClassRules, nil, nil),
		registry.NewResource(resourcev1.SchemeGroupVersion, "deviceclasses", "DeviceClass", false, resource.DeviceClassRules, nil, nil),
		registry.NewResource(resourcev1.SchemeGroupVersion, "resourceclaims", "ResourceClaim", true, resource.ResourceClaimRules, nil, nil, "status"),
		registry.NewResource(resourcev1.SchemeGroupVersion, "resourceclaimtemplates", "ResourceClaimTemplate", true, resource.ResourceClaimTemplateRules, nil, nil),
		registry.NewResource(resourcev1.SchemeGroupVersion, "resourceslices", "ResourceSlice", false, resource.ResourceSliceRules, nil, nil),
		registry.NewResource(coordinationv1.SchemeGroupVersion, "leases", "Lease", true, coordination.LeaseRules, nil, nil),
		registry.NewResource(discoveryv1.SchemeGroupVersion, "endpointslices", "EndpointSlice", true, core.EndpointSliceRules, nil, nil),
		registry.NewResource(certificatesv1.SchemeGroupVersion, "certificatesigningrequests", "CertificateSigningRequest", false, certificates.CSRRules, []string{"csr"}, nil, "status", "approval"),
		registry.NewResource(networkingv1.SchemeGroupVersion, "networkpolicies", "NetworkPolicy", true, networking.NetworkPolicyRules, []string{"netpol"}, nil),
		registry.NewResource(networkingv1.SchemeGroupVersion, "ingresses", "Ingress", true, networking.IngressRules, []string{"ing"}, nil, "status"),
		registry.NewResource(networkingv1.SchemeGroupVersion, "ingressclasses", "IngressClass", false, networking.IngressClassRules, nil, nil),
		registry.NewResource(networkingv1.SchemeGroupVersion, "servicecidrs", "ServiceCIDR", false, networking.ServiceCIDRRules, nil, nil, "status"),
		registry.NewResource(networkingv1.SchemeGroupVersion, "ipaddresses", "IPAddress", false, networking.IPAddressRules, []string{"ip"}, nil),
		registry.NewResource(flowcontrolv1.SchemeGroupVersion, "flowschemas", "FlowSchema", false, flowcontrol.FlowSchemaRules, nil, nil, "status"),
		registry.NewResource(flowcontrolv1.SchemeGroupVersion, "prioritylevelconfigurations", "PriorityLevelConfiguration", false, flowcontrol.PriorityLevelRules, nil, nil, "status"),
		registry.NewResource(apiextensionsv1.SchemeGroupVersion, "customresourcedefinitions", "CustomResourceDefinition", false, apiextensions.CustomResourceDefinitionRules, []string{"crd", "crds"}, []string{"api-extensions"}, "status"),
		registry.NewResource(admissionregistrationv1.SchemeGroupVersion, "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", false, admissionregistration.MutatingWebhookConfigurationRules, nil, []string{"api-extensions"}),
		registry.NewResource(admissionregistrationv1.SchemeGroupVersion, "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", false, admissionregistration.ValidatingWebhookConfigurationRules, nil, []string{"api-extensions"}),
		registry.NewResource(admissionregistrationv1.SchemeGroupVersion, "validatingadmissionpolicies", "ValidatingAdmissionPolicy", false, admissionregistration.ValidatingAdmissionPolicyRules, nil, []string{"api-extensions"}, "status"),
		registry.NewResource(admissionregistrationv1.SchemeGroupVersion, "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", false, admissionregistration.ValidatingAdmissionPolicyBindingRules, nil, []string{"api-extensions"}),
		registry.NewResource(admissionregistrationv1.SchemeGroupVersion, "mutatingadmissionpolicies", "MutatingAdmissionPolicy", false, admissionregistration.MutatingAdmissionPolicyRules, nil, []string{"api-extensions"}),
		registry.NewResource(admissionregistrationv1.SchemeGroupVersion, "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", false, admissionregistration.MutatingAdmissionPolicyBindingRules, nil, []string{"api-extensions"}),
		registry.NewResource(apiregistrationv1.SchemeGroupVersion, "apiservices", "APIService", false, apiregistration.APIServiceRules, nil, []string{"api-extensions"}, "status"),
	)
}
