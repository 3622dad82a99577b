package volumes

import (
	"context"
	"fmt"
	"io/fs"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/minik8s/minik8s/pkg/agent/fieldpath"
)

// defaultMode is Kubernetes' mode for volume files when none is given.
const defaultMode = 0o644

func mode(m *int32, fallback fs.FileMode) fs.FileMode {
	if m == nil {
		return fallback
	}
	return fs.FileMode(*m) & fs.ModePerm
}

// keyedPayload builds the files of a configMap or secret volume: every key, or the
// items listed. A listed key the object lacks is an error unless the volume is optional.
func keyedPayload(kind string, data map[string][]byte, items []corev1.KeyToPath, dflt fs.FileMode, optional bool) (map[string]File, error) {
	out := map[string]File{}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = File{Data: v, Mode: dflt}
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%s references non-existent %s key: %s", kind, map[string]string{"configmap": "config", "secret": "secret"}[kind], it.Key)
		}
		out[it.Path] = File{Data: v, Mode: mode(it.Mode, dflt)}
	}
	return out, nil
}

func configMapData(cm *corev1.ConfigMap) map[string][]byte {
	data := map[string][]byte{}
	if cm == nil {
		return data
	}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return data
}

// downwardAPIPayload builds the files of a downwardAPI volume (or projection).
func downwardAPIPayload(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, dflt fs.FileMode, allocatable corev1.ResourceList) (map[string]File, error) {
	out := map[string]File{}
	for _, it := range items {
		var (
			value string
			err   error
		)
		switch {
		case it.FieldRef != nil:
			value, err = fieldpath.Value(pod, it.FieldRef.FieldPath, fieldpath.Addresses{})
		case it.ResourceFieldRef != nil:
			value, err = fieldpath.VolumeResourceValue(pod, it.ResourceFieldRef, allocatable)
		default:
			err = fmt.Errorf("downwardAPI item %s has neither fieldRef nor resourceFieldRef", it.Path)
		}
		if err != nil {
			return nil, err
		}
		out[it.Path] = File{Data: []byte(value), Mode: mode(it.Mode, dflt)}
	}
	return out, nil
}

// tokenFile asks the API (TokenRequest) for a token of the pod's service account bound
// to the pod, as the kubelet's projected serviceAccountToken volumes do. Like the
// kubelet's token manager it reuses a token until 80% of its lifetime has passed, so
// the pod's every sync does not mint a new one, and the file changes when it is renewed.
func (m *Manager) tokenFile(ctx context.Context, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection, dflt fs.FileMode) (map[string]File, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	// As the kubelet: 0600 and owned by the pod's one runAsUser when there is one, or
	// when fsGroup will make it 0640.
	uid := fsUserOf(pod)
	if uid != nil || fsGroupOf(pod) != nil {
		dflt = 0o600
	}
	key := fmt.Sprintf("%s/%s/%s/%s/%d", pod.Namespace, sa, pod.UID, src.Audience, ptrValue(src.ExpirationSeconds))
	if token, ok := m.tokens.get(key); ok {
		return map[string]File{src.Path: {Data: []byte(token), Mode: dflt, UID: uid}}, nil
	}
	req := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	// A pod bound a moment ago may not be in the API server's view of this node yet (the
	// node authorizer's graph and its pod cache are fed by informers): that Forbidden is a
	// race, retried briefly, as the kubelet's volume manager retries, before the mount fails.
	var resp *authnv1.TokenRequest
	err := retry.OnError(tokenRetry, apierrors.IsForbidden, func() (err error) {
		resp, err = m.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("failed to fetch token: %w", err) // the kubelet's token manager's words
	}
	m.tokens.put(key, resp.Status.Token, resp.CreationTimestamp.Time, resp.Status.ExpirationTimestamp.Time)
	return map[string]File{src.Path: {Data: []byte(resp.Status.Token), Mode: dflt, UID: uid}}, nil
}

// tokenRetry spaces the retries of a forbidden token request: 0.1 s doubling, 1.5 s in all.
var tokenRetry = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 5}

func ptrValue(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// tokenCache holds the service account tokens of projected volumes until they are due
// for renewal.
type tokenCache struct {
	mu      sync.Mutex
	entries map[string]cachedToken
	now     func() time.Time
}

type cachedToken struct {
	token        string
	renew, until time.Time
}

func (c *tokenCache) get(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !c.now().Before(e.renew) {
		return "", false
	}
	return e.token, true
}

func (c *tokenCache) put(key, token string, issued, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if issued.IsZero() || issued.After(now) {
		issued = now
	}
	if c.entries == nil {
		c.entries = map[string]cachedToken{}
	}
	for k, e := range c.entries { // tokens of pods long gone
		if !now.Before(e.until) {
			delete(c.entries, k)
		}
	}
	c.entries[key] = cachedToken{token: token, renew: issued.Add(expires.Sub(issued) * 8 / 10), until: expires}
}
