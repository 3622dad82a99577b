package controlplane

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/minik8s/minik8s/internal/controller/workloop"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// The ConfigMap kube-apiserver keeps to say since when it has tracked the use of legacy
// service account tokens (the kubernetes.io/legacy-token-last-used label on their Secrets):
// kube-system/kube-apiserver-legacy-service-account-token-tracking, data since=YYYY-MM-DD
// (UTC). Made when missing (again at most every 30 min, as kube's controller), its date
// put right when it does not parse.
const (
	tokenTrackingConfigMap = "kube-apiserver-legacy-service-account-token-tracking"
	tokenTrackingKey       = "since"
	tokenTrackingRemake    = 30 * time.Minute
)

// runLegacyTokenTracking keeps the ConfigMap until ctx ends, on goroutines counted in running.
func runLegacyTokenTracking(ctx context.Context, running *sync.WaitGroup, client kubernetes.Interface, log *slog.Logger) {
	informer := corev1informers.NewFilteredConfigMapInformer(client, metav1.NamespaceSystem, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", tokenTrackingConfigMap).String()
	})
	queue := workloop.NewQueue[string]("legacy_token_tracking_controller")
	look := func(any) { queue.Add(tokenTrackingConfigMap) }
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: look, UpdateFunc: func(_, obj any) { look(obj) }, DeleteFunc: look}); err != nil {
		log.Error("legacy token tracking", "err", err)
		return
	}
	var lastMade time.Time
	keep := func(ctx context.Context, _ string) (time.Duration, error) {
		now := time.Now()
		configMaps := client.CoreV1().ConfigMaps(metav1.NamespaceSystem)
		obj, exists, err := informer.GetStore().GetByKey(metav1.NamespaceSystem + "/" + tokenTrackingConfigMap)
		switch {
		case err != nil:
			return 0, err
		case !exists:
			if wait := lastMade.Add(tokenTrackingRemake).Sub(now); !lastMade.IsZero() && wait > 0 {
				return wait, nil
			}
			_, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tokenTrackingConfigMap},
				Data: map[string]string{tokenTrackingKey: now.UTC().Format(time.DateOnly)}}, metav1.CreateOptions{})
			if err == nil || apierrors.IsAlreadyExists(err) {
				lastMade = now
				return 0, nil
			}
			return 0, err
		}
		cm := obj.(*corev1.ConfigMap)
		if _, err := time.Parse(time.DateOnly, cm.Data[tokenTrackingKey]); err == nil {
			return 0, nil
		}
		fixed := cm.DeepCopy()
		if fixed.Data == nil {
			fixed.Data = map[string]string{}
		}
		fixed.Data[tokenTrackingKey] = now.UTC().Format(time.DateOnly)
		_, err = configMaps.Update(ctx, fixed, metav1.UpdateOptions{})
		return 0, err
	}
	running.Go(func() { informer.RunWithContext(ctx) })
	running.Go(func() {
		queue.Add(tokenTrackingConfigMap)
		workloop.RunWorkers(ctx, 1, queue, log, keep, informer.HasSynced)
	})
}
