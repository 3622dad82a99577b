// Package serviceaccount is Kubernetes' ServiceAccount admission plugin: a pod runs as its
// namespace's "default" account unless it names one, the account must exist, and the pod
// gets a projected kube-api-access-xxxxx volume (a bound token, the cluster CA, its
// namespace) mounted where client-go's InClusterConfig looks, unless the pod or its
// account opts out (automountServiceAccountToken: false); an account annotated
// kubernetes.io/enforce-mountable-secrets limits its pods to the secrets it lists.
package serviceaccount

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/control/admission"
	"github.com/minik8s/minik8s/pkg/control/auth"
	"github.com/minik8s/minik8s/pkg/control/registry/generic"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/ptr"
)

const (
	// DefaultAccount is the account of pods that name none.
	DefaultAccount = "default"
	// MountPath is where the token, ca.crt and namespace appear in containers.
	MountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// VolumePrefix starts the generated volume's name.
	VolumePrefix = "kube-api-access-"
	// TokenExpirationSeconds is what the volume asks for: the kubelet refreshes the
	// token before it expires (3607 s, as kube-apiserver's admission writes it).
	TokenExpirationSeconds = 3607
	rootCAConfigMap        = "kube-root-ca.crt"
	mirrorPodAnnotation    = "kubernetes.io/config.mirror"
)

// Plugin reads ServiceAccounts from the shared informer, asking the API when the informer
// has not seen an account (yet).
type Plugin struct {
	informers *admission.Informers
	accounts  corelisters.ServiceAccountLister
	synced    func() bool
}

// New is the plugin, registering its informer in inf.
func New(inf *admission.Informers) *Plugin {
	sa := inf.Factory.Core().V1().ServiceAccounts()
	return &Plugin{informers: inf, accounts: sa.Lister(), synced: sa.Informer().HasSynced}
}

// Admit gives a pod being created its account and, unless the pod or its account opts
// out, the kube-api-access volume. Mirror pods are not changed (the kubelet would not
// recognise its static pod): Validate checks them.
func (p *Plugin) Admit(ctx context.Context, a *generic.Attributes) error {
	pod := admission.PodCreate(a)
	if pod == nil {
		return nil
	}
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		return p.Validate(ctx, a)
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = pod.Spec.DeprecatedServiceAccount // the older field's value, as defaulting copies it
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultAccount
	}
	sa, err := p.account(ctx, a, pod.Spec.ServiceAccountName)
	if err != nil {
		return err
	}
	if pod.Spec.DeprecatedServiceAccount == "" {
		pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	}
	if automount(sa, pod) {
		mountToken(pod)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && sa != nil {
		for _, s := range sa.ImagePullSecrets {
			pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s.Name})
		}
	}
	return nil
}

// Validate refuses a pod being created without an existing account, and a mirror pod that
// refers to an account, secrets or a token projection (a node must not reach them through
// a static pod).
func (p *Plugin) Validate(ctx context.Context, a *generic.Attributes) error {
	pod := admission.PodCreate(a)
	if pod == nil {
		return nil
	}
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		return validateMirror(a, pod)
	}
	if pod.Spec.ServiceAccountName == "" {
		return admission.Forbidden(a, fmt.Errorf("no service account specified for pod %s/%s", a.Namespace, pod.Name))
	}
	sa, err := p.account(ctx, a, pod.Spec.ServiceAccountName)
	if err != nil || sa == nil {
		return err
	}
	if enforce, _ := strconv.ParseBool(sa.Annotations[EnforceMountableSecretsAnnotation]); enforce {
		if err := limitSecretReferences(sa, pod); err != nil {
			return admission.Forbidden(a, err)
		}
	}
	return nil
}

// EnforceMountableSecretsAnnotation on an account ("true") limits its pods to the secrets
// and pull secrets it lists.
const EnforceMountableSecretsAnnotation = "kubernetes.io/enforce-mountable-secrets"

// limitSecretReferences refuses a pod naming a secret its account does not list (in a
// volume, or the env of a container or init container) or a pull secret it does not list,
// with kube-apiserver's wording.
func limitSecretReferences(sa *corev1.ServiceAccount, pod *corev1.Pod) error {
	mountable := sets.New[string]()
	for _, s := range sa.Secrets {
		mountable.Insert(s.Name)
	}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil && !mountable.Has(v.Secret.SecretName) {
			return fmt.Errorf("volume with secret.secretName=%q is not allowed because service account %s does not reference that secret", v.Secret.SecretName, sa.Name)
		}
	}
	containers := func(kind string, cs []corev1.Container) error {
		for _, c := range cs {
			for _, env := range c.Env {
				if ref := env.ValueFrom; ref != nil && ref.SecretKeyRef != nil && !mountable.Has(ref.SecretKeyRef.Name) {
					return fmt.Errorf("%s %s with envVar %s referencing secret.secretName=%q is not allowed because service account %s does not reference that secret",
						kind, c.Name, env.Name, ref.SecretKeyRef.Name, sa.Name)
				}
			}
			for _, from := range c.EnvFrom {
				if from.SecretRef != nil && !mountable.Has(from.SecretRef.Name) {
					return fmt.Errorf("%s %s with envFrom referencing secret.secretName=%q is not allowed because service account %s does not reference that secret",
						kind, c.Name, from.SecretRef.Name, sa.Name)
				}
			}
		}
		return nil
	}
	if err := containers("init container", pod.Spec.InitContainers); err != nil {
		return err
	}
	if err := containers("container", pod.Spec.Containers); err != nil {
		return err
	}
	pullable := sets.New[string]()
	for _, s := range sa.ImagePullSecrets {
		pullable.Insert(s.Name)
	}
	for i, ref := range pod.Spec.ImagePullSecrets {
		if !pullable.Has(ref.Name) {
			return fmt.Errorf("imagePullSecrets[%d].name=%q is not allowed because service account %s does not reference that imagePullSecret", i, ref.Name, sa.Name)
		}
	}
	return nil
}

func validateMirror(a *generic.Attributes, pod *corev1.Pod) error {
	if pod.Spec.ServiceAccountName != "" {
		return admission.Forbidden(a, errors.New("a mirror pod may not reference service accounts"))
	}
	if len(auth.PodRefs(pod, "secrets")) > 0 {
		return admission.Forbidden(a, errors.New("a mirror pod may not reference secrets"))
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil {
				return admission.Forbidden(a, errors.New("a mirror pod may not use ServiceAccountToken volume projections"))
			}
		}
	}
	return nil
}

// defaultAttempts is how often a missing "default" account is looked up before the pod is
// refused: the serviceaccount controller makes it moments after its namespace, and a pod
// created in that moment waits for it rather than failing, as in kube-apiserver.
const defaultAttempts = 10

// account is the pod's ServiceAccount from the cache, else from the API (several times
// for "default"); a missing one is kube-apiserver's refusal. Before the informers start
// (the server's own bootstrap writes) it is nil: nothing is checked.
func (p *Plugin) account(ctx context.Context, a *generic.Attributes, name string) (*corev1.ServiceAccount, error) {
	ready, err := p.informers.Wait(ctx, a, p.synced)
	if err != nil || !ready {
		return nil, err
	}
	refuse := func(err error) error {
		return admission.Forbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.Namespace, name, err))
	}
	sa, err := p.accounts.ServiceAccounts(a.Namespace).Get(name)
	if err == nil {
		return sa, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, refuse(err)
	}
	attempts := 1
	if name == DefaultAccount {
		attempts = defaultAttempts
	}
	interval := time.Duration(100+rand.IntN(100)) * time.Millisecond
	for i := 0; i < attempts; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, refuse(ctx.Err())
			case <-time.After(interval):
			}
		}
		sa, err := p.informers.Client.CoreV1().ServiceAccounts(a.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			return sa, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, refuse(err)
		}
	}
	return nil, refuse(apierrors.NewNotFound(corev1.Resource("serviceaccount"), name))
}

// automount: the pod's automountServiceAccountToken wins, then its account's; the default
// is to mount.
func automount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if v := pod.Spec.AutomountServiceAccountToken; v != nil {
		return *v
	}
	if sa != nil && sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountToken mounts the kube-api-access volume in every container that has nothing at
// MountPath, and adds the volume when one does, unless the pod has one already (by its
// name's prefix, the first, as kube's plugin finds it).
func mountToken(pod *corev1.Pod) {
	name, has := "", false
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, VolumePrefix) {
			name, has = v.Name, true // the pod was made from one that had it
			break
		}
	}
	if !has {
		name = VolumePrefix + utilrand.String(5)
	}
	needed := false
	mount := func(cs []corev1.Container) {
		for i := range cs {
			if !mountsAt(cs[i].VolumeMounts, MountPath) {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: MountPath})
				needed = true
			}
		}
	}
	mount(pod.Spec.InitContainers)
	mount(pod.Spec.Containers)
	if needed && !has {
		pod.Spec.Volumes = append(pod.Spec.Volumes, Volume(name))
	}
}

func mountsAt(mounts []corev1.VolumeMount, path string) bool {
	for _, m := range mounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// Volume is the projected kube-api-access volume, as kube-apiserver writes it.
func Volume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](TokenExpirationSeconds)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: rootCAConfigMap},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}}
}
