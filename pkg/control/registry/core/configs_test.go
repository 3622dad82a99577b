package core

import (
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/registry/internal/registrytest"
	corev1 "k8s.io/api/core/v1"
)

func TestSecretStringDataAndType(t *testing.T) {
	s := &corev1.Secret{ObjectMeta: registrytest.ObjMeta("creds"), Data: map[string][]byte{"user": []byte("old"), "keep": []byte("k")},
		StringData: map[string]string{"user": "admin", "password": "s3cret"}}
	if errs := registrytest.CreateSteps(SecretRules, s); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if s.Type != corev1.SecretTypeOpaque || s.StringData != nil ||
		string(s.Data["user"]) != "admin" || string(s.Data["password"]) != "s3cret" || string(s.Data["keep"]) != "k" {
		t.Errorf("stringData not folded into data (it wins), or type not Opaque: %+v", s)
	}
	if got := SecretRules.Table.Row(s); got[1] != "Opaque" || got[2] != int64(3) {
		t.Errorf("secret row: %v", got)
	}

	tls := &corev1.Secret{ObjectMeta: registrytest.ObjMeta("tls"), Type: corev1.SecretTypeTLS, Data: map[string][]byte{corev1.TLSCertKey: nil, "bad key!": nil}}
	registrytest.ExpectErrors(t, "tls secret", registrytest.CreateSteps(SecretRules, tls), "data[tls.key]: FieldValueRequired", "data[bad key!]: FieldValueInvalid")

	old := s.DeepCopy()
	immutable := true
	old.Immutable = &immutable
	changed := old.DeepCopy()
	changed.Type = corev1.SecretTypeBasicAuth
	changed.Data["user"] = []byte("root")
	registrytest.ExpectErrors(t, "changed immutable secret", registrytest.UpdateSteps(SecretRules, changed, old), "type: FieldValueInvalid", "data: FieldValueForbidden")
}

func TestConfigMapRules(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: registrytest.ObjMeta("cfg"), Data: map[string]string{"a": "1", "big": strings.Repeat("x", maxConfigSize)},
		BinaryData: map[string][]byte{"a": {1}}}
	registrytest.ExpectErrors(t, "config map", registrytest.CreateSteps(ConfigMapRules, cm), "data[a]: FieldValueInvalid", "[]: FieldValueTooLong")
	cm = &corev1.ConfigMap{ObjectMeta: registrytest.ObjMeta("cfg"), Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": {1}}}
	if row := ConfigMapRules.Table.Row(cm); row[1] != int64(2) {
		t.Errorf("DATA counts data and binaryData: %v", row)
	}
}
