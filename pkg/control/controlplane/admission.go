package controlplane

import (
	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/admission/defaultstorageclass"
	"github.com/minik8s/minik8s/pkg/control/admission/defaulttolerationseconds"
	"github.com/minik8s/minik8s/pkg/control/admission/limitranger"
	"github.com/minik8s/minik8s/pkg/control/admission/noderestriction"
	"github.com/minik8s/minik8s/pkg/control/admission/podsecurity"
	"github.com/minik8s/minik8s/pkg/control/admission/priority"
	"github.com/minik8s/minik8s/pkg/control/admission/resourcequota"
	"github.com/minik8s/minik8s/pkg/control/admission/serviceaccount"
	"github.com/minik8s/minik8s/pkg/control/admission/storageprotection"
	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	"github.com/minik8s/minik8s/pkg/control/store"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// admissionChain is the admission chain after NamespaceLifecycle (which the API server
// puts first), in kube-apiserver's recommended order: every mutating plugin, then every
// validating one, ResourceQuota last so only writes every other plugin admitted are
// charged. The plugins read the process's shared informers and the API server's own
// loopback client; the returned informers are started once the server serves.
func admissionChain(st store.Interface, reg *registry.Registry, privileged kubernetes.Interface, shared informers.SharedInformerFactory) (generic.Admission, *admission.Informers, error) {
	inf := admission.NewInformers(shared, privileged)
	limits := limitranger.New(inf)
	accounts := serviceaccount.New(inf)
	podSecurity, err := podsecurity.New(inf)
	if err != nil {
		return generic.Admission{}, nil, err
	}
	chain := generic.Admission{
		Mutating: []generic.MutatingAdmission{
			limits,
			accounts,
			noderestriction.New(privileged),
			priority.New(inf, st, reg),
			defaulttolerationseconds.Plugin{},
			defaultstorageclass.New(inf),
			storageprotection.Plugin{},
		},
		Validating: []generic.ValidatingAdmission{
			limits,
			accounts,
			podSecurity,
			resourcequota.New(inf),
		},
	}
	return chain, inf, nil
}
