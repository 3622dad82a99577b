package controlplane

import (
	"github.com/minik8s/minik8s/internal/controller/discovered"
	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/admission/defaultingressclass"
	"github.com/minik8s/minik8s/pkg/control/admission/defaultstorageclass"
	"github.com/minik8s/minik8s/pkg/control/admission/defaulttolerationseconds"
	"github.com/minik8s/minik8s/pkg/control/admission/limitranger"
	"github.com/minik8s/minik8s/pkg/control/admission/nodedeclaredfeatures"
	"github.com/minik8s/minik8s/pkg/control/admission/noderestriction"
	"github.com/minik8s/minik8s/pkg/control/admission/nodetaint"
	"github.com/minik8s/minik8s/pkg/control/admission/podsecurity"
	"github.com/minik8s/minik8s/pkg/control/admission/policy"
	"github.com/minik8s/minik8s/pkg/control/admission/priority"
	"github.com/minik8s/minik8s/pkg/control/admission/pvcresize"
	"github.com/minik8s/minik8s/pkg/control/admission/resourcequota"
	"github.com/minik8s/minik8s/pkg/control/admission/runtimeclass"
	"github.com/minik8s/minik8s/pkg/control/admission/serviceaccount"
	"github.com/minik8s/minik8s/pkg/control/admission/storageprotection"
	"github.com/minik8s/minik8s/pkg/control/admission/upstream"
	"github.com/minik8s/minik8s/pkg/control/admission/webhook"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/control/store"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// admissionChain is the admission chain after NamespaceLifecycle (which the API server
// puts first), in kube-apiserver's recommended order: every mutating plugin, then every
// validating one, ResourceQuota last so only writes every other plugin admitted are
// charged; the admission policies and webhooks after the built-in plugins of their kind,
// each kind's policies before its webhooks. The plugins read the process's shared informers and the API
// server's own loopback client (loopback is its config); the returned informers are
// started once the server serves, the policies once the authorizer is made.
func admissionChain(st store.Interface, reg *registry.Registry, privileged kubernetes.Interface, loopback *rest.Config, shared informers.SharedInformerFactory) (generic.Admission, *admission.Informers, *policy.Plugins, error) {
	inf := admission.NewInformers(shared, privileged)
	limits := limitranger.New(inf)
	accounts := serviceaccount.New(inf)
	podSecurity, err := podsecurity.New(inf)
	if err != nil {
		return generic.Admission{}, nil, nil, err
	}
	objects := upstream.NewObjects(reg)
	mutatingWebhooks, validatingWebhooks, err := webhook.New(inf, objects)
	if err != nil {
		return generic.Admission{}, nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(loopback)
	if err != nil {
		return generic.Admission{}, nil, nil, err
	}
	// Read again on a miss: a policy's paramKind may be a CRD created since.
	policies, err := policy.New(inf, objects, discovered.Mapper(privileged.Discovery()), dyn)
	if err != nil {
		return generic.Admission{}, nil, nil, err
	}
	priorities := priority.New(inf, st, reg)
	chain := generic.Admission{
		Mutating: []generic.MutatingAdmission{
			limits,
			accounts,
			noderestriction.New(privileged),
			nodetaint.Plugin{},
			priorities,
			runtimeclass.New(inf, st, reg),
			defaulttolerationseconds.Plugin{},
			defaultstorageclass.New(inf),
			storageprotection.Plugin{},
			defaultingressclass.New(inf),
			upstream.NewMutating(objects, inf.Started, policies.Mutating, mutatingWebhooks),
		},
		Validating: []generic.ValidatingAdmission{
			limits,
			accounts,
			priorities,
			podSecurity,
			pvcresize.New(inf),
			nodedeclaredfeatures.New(inf),
			policies.Validating,
			validatingWebhooks,
			resourcequota.New(inf),
		},
	}
	return chain, inf, policies, nil
}
