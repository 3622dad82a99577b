package podsync

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minik8s/minik8s/pkg/agent/credentials"
	"github.com/minik8s/minik8s/pkg/runtime"
)

// pullOptions are the registry settings for pulling a pod's images: the node's insecure
// registries and the credentials of the pod's imagePullSecrets. A secret that cannot be
// read is reported (as the kubelet does) and the pull goes on without it.
func (s *Syncer) pullOptions(ctx context.Context, pod *corev1.Pod) runtime.PullOptions {
	opts := runtime.PullOptions{InsecureRegistries: s.cfg.InsecureRegistries}
	var missing []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		secret, err := s.client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s/%s", pod.Namespace, ref.Name))
			continue
		}
		auths, err := credentials.FromSecret(secret)
		if err != nil {
			s.log.Warn("image pull secret unusable", "secret", pod.Namespace+"/"+ref.Name, "err", err)
			missing = append(missing, fmt.Sprintf("%s/%s", pod.Namespace, ref.Name))
			continue
		}
		opts.Auths = append(opts.Auths, auths...)
	}
	if len(missing) > 0 {
		s.podEvent(pod, corev1.EventTypeWarning, "FailedToRetrieveImagePullSecret",
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", "))
	}
	return opts
}
