package corevalidation

import (
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

// sysctlName is kube's sysctl name, dotted or slashed, of at most sysctlMaxLength.
var sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

const sysctlMaxLength = 253

// validateSysctls is kube's: names well formed and once each, none of a namespace the
// pod shares with the node. Whether the node allows one is its kubelet's to say.
func validateSysctls(sysctls []corev1.Sysctl, hostNet, hostIPC bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, s := range sysctls {
		p := path.Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlName.MatchString(s.Name):
			errs = append(errs, field.Invalid(p, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlName)))
		case names.Has(s.Name):
			errs = append(errs, field.Duplicate(p, s.Name))
		}
		switch ns, _, _ := utilsysctl.GetNamespace(s.Name); {
		case hostNet && ns == utilsysctl.NetNamespace:
			errs = append(errs, field.Invalid(p, s.Name, "may not be specified when 'hostNetwork' is true"))
		case hostIPC && ns == utilsysctl.IPCNamespace:
			errs = append(errs, field.Invalid(p, s.Name, "may not be specified when 'hostIPC' is true"))
		}
		names.Insert(s.Name)
	}
	return errs
}
