package generic

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/minik8s/minik8s/pkg/control/registry"
	"github.com/minik8s/minik8s/pkg/control/store"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Forbidden is the refusal of a write, as k8s.io/apiserver's admission.NewForbidden words
// it: `pods "web" is forbidden: <err>`, naming the object by its name, else its
// generateName, else "Unknown". A Forbidden error is passed on as it is.
func Forbidden(a *Attributes, err error) error {
	if apierrors.IsForbidden(err) {
		return err
	}
	name := a.Name
	if name == "" {
		name = "Unknown"
		if m, merr := meta.Accessor(a.Object); a.Object != nil && merr == nil {
			if m.GetName() != "" {
				name = m.GetName()
			} else if m.GetGenerateName() != "" {
				name = m.GetGenerateName()
			}
		}
	}
	return apierrors.NewForbidden(a.Resource.GroupResource(), name, err)
}

// Operation is what a write does, in admission's terms.
type Operation string

const (
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
	Delete Operation = "DELETE"
	// Connect is an exec, attach or port-forward of a pod; its object is the request's
	// options (PodExecOptions, PodAttachOptions, PodPortForwardOptions).
	Connect Operation = "CONNECT"
)

// Attributes describe one write to admission, as k8s.io/apiserver's admission.Attributes
// do: binding and eviction are CREATEs of the pods' subresources whose object is the
// Binding or Eviction; status, finalize and scale are UPDATEs of the subresource whose
// objects are the kind's own (for scale too, where Kubernetes gives the Scale).
type Attributes struct {
	Operation   Operation
	Resource    *registry.Resource
	Subresource string
	Namespace   string
	Name        string
	// Object is the object as it will be stored (nil for Delete); OldObject the stored
	// one (nil for Create). A mutating plugin may change Object; nothing may change OldObject.
	Object, OldObject runtime.Object
	DryRun            bool
}

// MutatingAdmission may change the object of a write, or refuse the write. Mutating
// plugins run in order, before the kind's own preparation, defaulting and validation.
type MutatingAdmission interface {
	Admit(ctx context.Context, a *Attributes) error
}

// ValidatingAdmission may refuse a write, after the kind's validation, just before the
// object is stored; it sees the object as it will be stored and must not change it.
type ValidatingAdmission interface {
	Validate(ctx context.Context, a *Attributes) error
}

// ConnectAdmission marks a plugin that admits CONNECTs too. In kube-apiserver only the
// admission webhooks and policies handle them; the built-in plugins see writes only.
type ConnectAdmission interface {
	AdmitsConnect()
}

// Admission is the admission chain: every mutating plugin, then every validating plugin.
type Admission struct {
	Mutating   []MutatingAdmission
	Validating []ValidatingAdmission
}

func (c Admission) admit(ctx context.Context, a *Attributes) error {
	if a.Operation == Create && a.Subresource == "" && a.Resource != nil && a.Resource.Terminating {
		return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, errors.New("create not allowed while custom resource definition is terminating"))
	}
	for _, p := range c.Mutating {
		if err := p.Admit(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// connect runs the plugins that admit CONNECTs, mutating then validating, as
// kube-apiserver's connect handler does.
func (c Admission) connect(ctx context.Context, a *Attributes) error {
	for _, p := range c.Mutating {
		if _, ok := p.(ConnectAdmission); ok {
			if err := p.Admit(ctx, a); err != nil {
				return err
			}
		}
	}
	for _, p := range c.Validating {
		if _, ok := p.(ConnectAdmission); ok {
			if err := p.Validate(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c Admission) validate(ctx context.Context, a *Attributes) error {
	for _, p := range c.Validating {
		if err := p.Validate(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// NamespaceLifecycle refuses content created in a namespace that is missing or being
// deleted, as Kubernetes' plugin of that name does. It remembers the last version of each
// namespace it read, so a create does not decode its namespace every time.
type NamespaceLifecycle struct {
	store      store.Interface
	namespaces *registry.Resource

	mu   sync.Mutex
	seen map[string]namespaceState
}

type namespaceState struct {
	rev         int64
	terminating bool
}

// NewNamespaceLifecycle is the plugin reading namespaces from st.
func NewNamespaceLifecycle(st store.Interface, reg *registry.Registry) *NamespaceLifecycle {
	ns, _ := reg.Lookup(namespacesGVR)
	return &NamespaceLifecycle{store: st, namespaces: ns, seen: map[string]namespaceState{}}
}

// immortalNamespaces are the namespaces kube-apiserver's NamespaceLifecycle never lets go.
var immortalNamespaces = sets.New(metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic)

// Admit refuses the deletion of an immortal namespace and checks creates of namespaced
// objects.
func (l *NamespaceLifecycle) Admit(ctx context.Context, a *Attributes) error {
	if a.Operation == Delete && a.Resource.GroupResource() == namespacesGVR.GroupResource() && immortalNamespaces.Has(a.Name) {
		return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, errors.New("this namespace may not be deleted"))
	}
	if a.Operation != Create || !a.Resource.Namespaced { // a Binding or an Eviction too
		return nil
	}
	if l.namespaces == nil {
		return apierrors.NewInternalError(errors.New("namespace lifecycle admission: the registry serves no namespaces"))
	}
	kv, err := l.store.Get(ctx, Key(l.namespaces, "", a.Namespace))
	if errors.Is(err, store.ErrNotFound) {
		l.mu.Lock()
		delete(l.seen, a.Namespace)
		l.mu.Unlock()
		return apierrors.NewNotFound(l.namespaces.GroupResource(), a.Namespace)
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	st, ok := l.seen[a.Namespace]
	l.mu.Unlock()
	if !ok || st.rev != kv.Revision {
		obj, err := Decode(l.namespaces, kv.Value, kv.Revision)
		if err != nil {
			return err
		}
		st = namespaceState{rev: kv.Revision, terminating: MustMeta(obj).GetDeletionTimestamp() != nil}
		l.mu.Lock()
		l.seen[a.Namespace] = st
		l.mu.Unlock()
	}
	if st.terminating {
		err := Forbidden(a, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
		if status, ok := err.(*apierrors.StatusError); ok {
			status.ErrStatus.Details.Causes = append(status.ErrStatus.Details.Causes, metav1.StatusCause{
				Type: corev1.NamespaceTerminatingCause, Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace), Field: "metadata.namespace",
			})
		}
		return err
	}
	return nil
}

// AddValidating appends p to the chain of validating plugins. It is for wiring that can
// only happen after the store exists (authorization's escalation check needs the
// authorizer, which reads through the API); call it before the store serves writes.
func (s *Store) AddValidating(p ValidatingAdmission) {
	s.admission.Validating = append(s.admission.Validating, p)
}
