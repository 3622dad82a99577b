// Package credentials reads registry credentials from image pull secrets
// (kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg), as the kubelet's
// credential keyring does.
package credentials

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// dockerAuth is one entry of a docker config: a user and password, or both in auth.
type dockerAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Auth     string `json:"auth"`
}

// FromSecret reads the credentials of a kubernetes.io/dockerconfigjson or
// kubernetes.io/dockercfg secret.
func FromSecret(secret *corev1.Secret) ([]runtime.RegistryAuth, error) {
	var entries map[string]dockerAuth
	switch secret.Type {
	case corev1.SecretTypeDockerConfigJson:
		var cfg struct {
			Auths map[string]dockerAuth `json:"auths"`
		}
		if err := json.Unmarshal(secret.Data[corev1.DockerConfigJsonKey], &cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", corev1.DockerConfigJsonKey, err)
		}
		entries = cfg.Auths
	case corev1.SecretTypeDockercfg:
		if err := json.Unmarshal(secret.Data[corev1.DockerConfigKey], &entries); err != nil {
			return nil, fmt.Errorf("%s: %w", corev1.DockerConfigKey, err)
		}
	default:
		return nil, fmt.Errorf("type %q is not %s or %s", secret.Type, corev1.SecretTypeDockerConfigJson, corev1.SecretTypeDockercfg)
	}
	var out []runtime.RegistryAuth
	for key, e := range entries {
		if e.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(e.Auth)
			if err != nil {
				return nil, fmt.Errorf("auth of %s is not base64: %w", key, err)
			}
			user, pass, ok := strings.Cut(string(raw), ":")
			if !ok {
				return nil, fmt.Errorf("auth of %s is not user:password", key)
			}
			e.Username, e.Password = user, pass
		}
		out = append(out, runtime.RegistryAuth{Host: registryHost(key), Username: e.Username, Password: e.Password})
	}
	return out, nil
}

// registryHost turns a docker config key ("https://index.docker.io/v1/",
// "registry.lab:5000") into the host image references name.
func registryHost(key string) string {
	host := key
	if _, rest, ok := strings.Cut(host, "://"); ok {
		host = rest
	}
	host, _, _ = strings.Cut(host, "/")
	switch host {
	case "index.docker.io", "registry-1.docker.io":
		return "docker.io"
	}
	return host
}
