package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"log/slog"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/cryptobyte"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/apimachinery/lease"
	"k8s.io/utils/clock"
)

// kube-apiserver's identity leases (its APIServerIdentity): each API server renews
// kube-system/apiserver-<hash of its host name> every 10 s for an hour, labelled
// apiserver.kubernetes.io/identity=kube-apiserver and kubernetes.io/hostname, so
// `kubectl get leases -n kube-system -l apiserver.kubernetes.io/identity` lists the API
// servers running; every hour each deletes the identity leases that expired (a server gone).
const (
	identityLabel         = "apiserver.kubernetes.io/identity"
	identityComponent     = "kube-apiserver"
	identityLeaseDuration = time.Hour
	identityRenewInterval = 10 * time.Second
	identityGCPeriod      = time.Hour
)

// apiServerID is kube-apiserver's identity for a host: "apiserver-" and the base32 of the
// first half of the SHA-256 of the host name and component, each length-prefixed.
func apiServerID(hostname string) string {
	b := cryptobyte.NewBuilder(nil)
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(hostname)) })
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(identityComponent)) })
	hash := sha256.Sum256(b.BytesOrPanic())
	return "apiserver-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(hash[:16]))
}

// runIdentityLease renews this API server's identity lease and collects the expired ones
// until ctx ends, on goroutines counted in running.
func runIdentityLease(ctx context.Context, running *sync.WaitGroup, client kubernetes.Interface, hostname string, log *slog.Logger) {
	id := apiServerID(hostname)
	labels := func(l *coordinationv1.Lease) error {
		if l.Labels == nil {
			l.Labels = map[string]string{}
		}
		l.Labels[identityLabel] = identityComponent
		l.Labels[corev1.LabelHostname] = hostname
		return nil
	}
	renewer := lease.NewController(clock.RealClock{}, client, id+"_"+string(uuid.NewUUID()), int32(identityLeaseDuration/time.Second),
		nil, identityRenewInterval, id, metav1.NamespaceSystem, labels)
	running.Go(func() { renewer.Run(ctx) })
	running.Go(func() {
		wait.UntilWithContext(ctx, func(ctx context.Context) { collectIdentityLeases(ctx, client, time.Now(), log) }, identityGCPeriod)
	})
}

// collectIdentityLeases deletes the identity leases expired at now, each read again first
// (another API server may have renewed or deleted it), as kube-apiserver's lease GC does.
func collectIdentityLeases(ctx context.Context, client kubernetes.Interface, now time.Time, log *slog.Logger) {
	leases := client.CoordinationV1().Leases(metav1.NamespaceSystem)
	list, err := leases.List(ctx, metav1.ListOptions{LabelSelector: identityLabel + "=" + identityComponent})
	if err != nil {
		log.Warn("listing API server identity leases", "err", err)
		return
	}
	expired := func(l *coordinationv1.Lease) bool {
		return l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil ||
			l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second).Before(now)
	}
	for i := range list.Items {
		if !expired(&list.Items[i]) {
			continue
		}
		latest, err := leases.Get(ctx, list.Items[i].Name, metav1.GetOptions{})
		if err != nil || !expired(latest) {
			continue
		}
		err = leases.Delete(ctx, latest.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &latest.ResourceVersion}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			log.Warn("deleting an expired API server identity lease", "lease", latest.Name, "err", err)
		}
	}
}
