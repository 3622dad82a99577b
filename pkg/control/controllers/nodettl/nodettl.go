// Package nodettl annotates every node with node.alpha.kubernetes.io/ttl, how long a node
// agent may cache the Secrets and ConfigMaps its pods use, by the cluster's size, as
// kube-controller-manager's ttl controller does: 0 s up to 100 nodes, longer for larger
// clusters, with overlapping bounds so a size at a bound does not flap.
package nodettl

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/minik8s/minik8s/internal/controller/workloop"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Name is the controller's name in --controllers, as kube-controller-manager's.
const Name = "ttl"

// boundaries are kube's ttlBoundaries: a cluster of sizeMin..sizeMax nodes gets ttl; the
// ranges overlap, so the step moves up past sizeMax and down below sizeMin only.
var boundaries = []struct {
	sizeMin, sizeMax, ttl int
}{
	{0, 100, 0},
	{90, 500, 15},
	{450, 1000, 30},
	{900, 2000, 60},
	{1800, math.MaxInt32, 300},
}

// Controller is the ttl controller.
type Controller struct {
	client kubernetes.Interface
	nodes  corelisters.NodeLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	log    *slog.Logger

	mu    sync.Mutex
	count int // nodes seen added and not deleted
	step  int // index into boundaries
}

// New wires the controller to the shared node informer.
func New(client kubernetes.Interface, nodes coreinformers.NodeInformer, log *slog.Logger) (*Controller, error) {
	c := &Controller{client: client, nodes: nodes.Lister(), synced: nodes.Informer().HasSynced, queue: workloop.NewQueue[string]("ttlcontroller"), log: log}
	enqueue := workloop.Enqueue(c.queue)
	_, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.resize(+1); enqueue(obj) },
		// Every update is looked at, so a change of size reaches each node with its next
		// status update (every 10 s from minilet), as in kube.
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: func(any) { c.resize(-1) },
	})
	return c, err
}

// resize counts a node in or out and moves the step when the count leaves its range.
func (c *Controller) resize(by int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count += by
	for c.count > boundaries[c.step].sizeMax {
		c.step++
	}
	for c.count < boundaries[c.step].sizeMin {
		c.step--
	}
}

func (c *Controller) desired() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return boundaries[c.step].ttl
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workloop.RunWorkers(ctx, 1, c.queue, c.log, c.sync, c.synced)
}

func (c *Controller) sync(ctx context.Context, name string) (time.Duration, error) {
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	want := strconv.Itoa(c.desired())
	if node.Annotations[corev1.ObjectTTLAnnotationKey] == want {
		return 0, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{corev1.ObjectTTLAnnotationKey: want}}})
	if err != nil {
		return 0, err
	}
	_, err = c.client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	return 0, err
}
