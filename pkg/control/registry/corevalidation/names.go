package corevalidation

import (
	"strings"

	"github.com/minik8s/minik8s/internal/resourcename"
	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateResourceName is kube's: a qualified name, a known one when it has no domain.
func ValidateResourceName(name corev1.ResourceName, path *field.Path) field.ErrorList {
	if msgs := utilvalidation.IsQualifiedName(string(name)); len(msgs) > 0 {
		return InvalidEach(path, name, msgs)
	}
	if !strings.Contains(string(name), "/") && !resourcename.IsStandard(name) {
		return field.ErrorList{field.Invalid(path, name, "must be a standard resource type or fully qualified")}
	}
	return nil
}

func HasKey(list corev1.ResourceList, name corev1.ResourceName) bool {
	_, ok := list[name]
	return ok
}

// ValidateDriverName is kube's (that of a CSI driver): a DNS subdomain of at most 63 characters.
func ValidateDriverName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	if len(name) > 63 {
		errs = append(errs, field.TooLong(path, "", 63))
	}
	errs = append(errs, InvalidEach(path, name, utilvalidation.IsDNS1123Subdomain(strings.ToLower(name)))...)
	return errs
}

func DNSLabel(name string, path *field.Path) field.ErrorList {
	return InvalidEach(path, name, utilvalidation.IsDNS1123Label(name))
}

// InvalidEach is an Invalid error at path for each message a validator such as
// utilvalidation.IsDNS1123Label gave about value.
func InvalidEach(path *field.Path, value any, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(path, value, msg))
	}
	return errs
}
