package core

import (
	"crypto/tls"
	"encoding/json"
	"reflect"

	"github.com/minik8s/minik8s/pkg/control/registry/corevalidation"

	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxConfigSize is the most data a ConfigMap or Secret may hold (1 MiB), as in Kubernetes.
const maxConfigSize = 1 << 20

var ConfigMapRules = registry.Rules{
	Validate: func(obj runtime.Object) field.ErrorList { return validateConfigMap(obj.(*corev1.ConfigMap)) },
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		cm, o := obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
		var errs field.ErrorList
		if isTrue(o.Immutable) {
			errs = frozen(cm.Immutable, []frozenField{{"data", cm.Data, o.Data}, {"binaryData", cm.BinaryData, o.BinaryData}})
		}
		// kube lists what the update may not change before what is wrong with the new object.
		return append(errs, validateConfigMap(cm)...)
	},
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{registry.NameColumn, registry.Column("Data", "string", corev1.ConfigMap{}.SwaggerDoc()["data"], false), registry.AgeColumn},
		Row: func(obj runtime.Object) []any {
			cm := obj.(*corev1.ConfigMap)
			return []any{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), registry.Age(cm.CreationTimestamp)}
		},
	},
}

func validateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	errs := registry.ValidateMeta(cm, true, validation.NameIsDNSSubdomain)
	size := 0
	for key, value := range cm.Data {
		errs = append(errs, validateConfigKey(key, field.NewPath("data").Key(key))...)
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, "duplicate of key present in binaryData"))
		}
		size += len(value)
	}
	for key, value := range cm.BinaryData {
		errs = append(errs, validateConfigKey(key, field.NewPath("binaryData").Key(key))...)
		size += len(value)
	}
	if size > maxConfigSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxConfigSize))
	}
	return errs
}

func validateConfigKey(key string, path *field.Path) field.ErrorList {
	return corevalidation.InvalidEach(path, key, utilvalidation.IsConfigMapKey(key))
}

func isTrue(b *bool) bool { return b != nil && *b }

// frozenField is a field of an immutable ConfigMap or Secret, new and old.
type frozenField struct {
	name     string
	now, was any
}

// frozen refuses, as kube does for an object stored with immutable: true, setting immutable
// back and any change of the fields.
func frozen(immutable *bool, fields []frozenField) field.ErrorList {
	const msg = "field is immutable when `immutable` is set"
	var errs field.ErrorList
	if !isTrue(immutable) {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), msg))
	}
	for _, f := range fields {
		if !reflect.DeepEqual(f.now, f.was) {
			errs = append(errs, field.Forbidden(field.NewPath(f.name), msg))
		}
	}
	return errs
}

var SecretRules = registry.Rules{
	// kube's warningsForSecret: a TLS secret whose key does not match its certificate
	Warnings: func(obj, _ runtime.Object) []string {
		if s := obj.(*corev1.Secret); s.Type == corev1.SecretTypeTLS {
			if _, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]); err != nil {
				return []string{err.Error()}
			}
		}
		return nil
	},
	Default:  func(obj runtime.Object) { defaultSecret(obj.(*corev1.Secret)) },
	Validate: func(obj runtime.Object) field.ErrorList { return validateSecret(obj.(*corev1.Secret)) },
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		s, o := obj.(*corev1.Secret), old.(*corev1.Secret)
		errs := registry.Immutable(s.Type, o.Type, field.NewPath("type"))
		if isTrue(o.Immutable) {
			errs = append(errs, frozen(s.Immutable, []frozenField{{"data", s.Data, o.Data}})...)
		}
		return append(errs, validateSecret(s)...)
	},
	Fields: func(obj runtime.Object) fields.Set { return fields.Set{"type": string(obj.(*corev1.Secret).Type)} },
	Table: &registry.TableDef{
		Columns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			registry.Column("Type", "string", corev1.Secret{}.SwaggerDoc()["type"], false),
			registry.Column("Data", "string", corev1.Secret{}.SwaggerDoc()["data"], false),
			registry.AgeColumn,
		},
		Row: func(obj runtime.Object) []any {
			s := obj.(*corev1.Secret)
			return []any{s.Name, string(s.Type), int64(len(s.Data)), registry.Age(s.CreationTimestamp)}
		},
	},
}

// defaultSecret folds the write-only stringData into data (stringData wins, as in
// Kubernetes' conversion) and defaults the type to Opaque.
func defaultSecret(s *corev1.Secret) {
	if len(s.StringData) > 0 && s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
}

func validateSecret(s *corev1.Secret) field.ErrorList {
	errs := registry.ValidateMeta(s, true, validation.NameIsDNSSubdomain)
	data := field.NewPath("data")
	size := 0
	for key, value := range s.Data {
		errs = append(errs, validateConfigKey(key, data.Key(key))...)
		size += len(value)
	}
	if size > maxConfigSize {
		errs = append(errs, field.TooLong(data, "", maxConfigSize))
	}
	required := func(keys ...string) {
		for _, k := range keys {
			if _, ok := s.Data[k]; !ok {
				errs = append(errs, field.Required(data.Key(k), ""))
			}
		}
	}
	wellFormedJSON := func(key string) {
		if v, ok := s.Data[key]; ok {
			if err := json.Unmarshal(v, &map[string]any{}); err != nil {
				errs = append(errs, field.Invalid(data.Key(key), "<secret contents redacted>", err.Error()))
			}
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		required(corev1.DockerConfigKey)
		wellFormedJSON(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		required(corev1.DockerConfigJsonKey)
		wellFormedJSON(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		_, user := s.Data[corev1.BasicAuthUsernameKey]
		_, password := s.Data[corev1.BasicAuthPasswordKey]
		if !user && !password {
			required(corev1.BasicAuthUsernameKey, corev1.BasicAuthPasswordKey)
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(data.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		required(corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	}
	return errs
}

var ServiceAccountRules = registry.Rules{
	ReturnDeletedObject: true,
	// kube's warnIfHasEnforceMountableSecretsAnnotation: the annotation (which admission's
	// serviceaccount plugin enforces) is deprecated, warned of when a write sets it.
	Warnings: func(obj, old runtime.Object) []string {
		const key = "kubernetes.io/enforce-mountable-secrets"
		if old != nil {
			if _, had := old.(*corev1.ServiceAccount).Annotations[key]; had {
				return nil
			}
		}
		if _, ok := obj.(*corev1.ServiceAccount).Annotations[key]; ok {
			return []string{"metadata.annotations[" + key + "]: deprecated in v1.32+; prefer separate namespaces to isolate access to mounted secrets"}
		}
		return nil
	},
	Table: &registry.TableDef{
		// No SECRETS column, as in kube v1.36: token Secrets are no longer listed in a ServiceAccount.
		Columns: []metav1.TableColumnDefinition{registry.NameColumn, registry.AgeColumn},
		Row: func(obj runtime.Object) []any {
			sa := obj.(*corev1.ServiceAccount)
			return []any{sa.Name, registry.Age(sa.CreationTimestamp)}
		},
	},
}
