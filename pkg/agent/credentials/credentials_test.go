package credentials

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/runtime"
)

func TestFromSecret(t *testing.T) {
	secret := &corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(
		`{"auths":{"127.0.0.1:5000":{"username":"lab","password":"secret"},"https://index.docker.io/v1/":{"auth":"bWU6cHc="}}}`)}}
	got, err := FromSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b runtime.RegistryAuth) int { return len(a.Host) - len(b.Host) })
	want := []runtime.RegistryAuth{{Host: "docker.io", Username: "me", Password: "pw"}, {Host: "127.0.0.1:5000", Username: "lab", Password: "secret"}}
	if !slices.Equal(got, want) {
		t.Errorf("auths %+v, want %+v", got, want)
	}
	for name, bad := range map[string]*corev1.Secret{
		"opaque":   {Type: corev1.SecretTypeOpaque},
		"bad json": {Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte("{")}},
		"bad auth": {Type: corev1.SecretTypeDockercfg, Data: map[string][]byte{corev1.DockerConfigKey: []byte(`{"r.lab":{"auth":"bm9jb2xvbg=="}}`)}},
	} {
		if _, err := FromSecret(bad); err == nil {
			t.Errorf("%s secret accepted", name)
		}
	}
}
