package credentials

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/minik8s/minik8s/pkg/runtime"
)

// ForPod reads the credentials of the pod's imagePullSecrets. A secret that cannot be
// read or used is named in missing (namespace/name), for the kubelet's event, and the
// pull goes on without it.
func ForPod(ctx context.Context, secrets corev1client.SecretsGetter, pod *corev1.Pod, log *slog.Logger) (auths []runtime.RegistryAuth, missing []string) {
	for _, ref := range pod.Spec.ImagePullSecrets {
		name := fmt.Sprintf("%s/%s", pod.Namespace, ref.Name)
		secret, err := secrets.Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			missing = append(missing, name)
			continue
		}
		a, err := FromSecret(secret)
		if err != nil {
			log.Warn("image pull secret unusable", "secret", name, "err", err)
			missing = append(missing, name)
			continue
		}
		auths = append(auths, a...)
	}
	return auths, missing
}
