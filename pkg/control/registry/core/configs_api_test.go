package core_test

import (
	"context"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestImmutableConfigMapsAndSecrets: an immutable ConfigMap or Secret refuses changes with
// kube-apiserver 1.36's words, listed before what the new object itself gets wrong (as
// ValidateConfigMapUpdate and ValidateSecretUpdate list them); it can still be deleted and
// created again.
func TestImmutableConfigMapsAndSecrets(t *testing.T) {
	c := controlplanetest.Shared(t)
	ctx, ns := context.Background(), c.Namespace
	configMaps, secrets := c.Client.CoreV1().ConfigMaps(ns), c.Client.CoreV1().Secrets(ns)
	expectError := func(what string, err error, want string) {
		t.Helper()
		if err == nil || err.Error() != want {
			t.Errorf("%s: error %v\nwant %s", what, err, want)
		}
	}

	cm, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "frozen"},
		Data: map[string]string{"a": "1"}, Immutable: ptr.To(true)}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changed := cm.DeepCopy()
	changed.Data["a"] = "2"
	changed.BinaryData = map[string][]byte{"a": {1}}
	_, err = configMaps.Update(ctx, changed, metav1.UpdateOptions{})
	expectError("changed config map", err, `ConfigMap "frozen" is invalid: [data: Forbidden: field is immutable when `+"`immutable`"+` is set, `+
		`binaryData: Forbidden: field is immutable when `+"`immutable`"+` is set, data[a]: Invalid value: "a": duplicate of key present in binaryData]`)
	changed = cm.DeepCopy()
	changed.Immutable = ptr.To(false)
	_, err = configMaps.Update(ctx, changed, metav1.UpdateOptions{})
	expectError("mutable again", err, `ConfigMap "frozen" is invalid: immutable: Forbidden: field is immutable when `+"`immutable`"+` is set`)
	if err := configMaps.Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cm.ResourceVersion, cm.UID, cm.Data["a"] = "", "", "2"
	if _, err := configMaps.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Errorf("re-created with other data: %v", err)
	}

	secret, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "frozen"},
		Data: map[string][]byte{"a": []byte("1")}, Immutable: ptr.To(true)}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret.Type = corev1.SecretTypeTLS
	secret.Data["a"] = []byte("2")
	_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{})
	expectError("changed secret", err, `Secret "frozen" is invalid: [type: Invalid value: "kubernetes.io/tls": field is immutable, `+
		`data: Forbidden: field is immutable when `+"`immutable`"+` is set, data[tls.crt]: Required value, data[tls.key]: Required value]`)

	_, err = secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "big"},
		Data: map[string][]byte{"a": []byte(strings.Repeat("x", 1<<20)), "b": {1}}}, metav1.CreateOptions{})
	expectError("big secret", err, `Secret "big" is invalid: data: Too long: may not be more than 1048576 bytes`)
}
