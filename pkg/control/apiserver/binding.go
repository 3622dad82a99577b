package apiserver

import (
	"fmt"
	"net/http"

	"github.com/minik8s/minik8s/pkg/control/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// serveBinding assigns a pod to a node (POST pods/NAME/binding), what the scheduler does.
func (s *Server) serveBinding(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) {
	var b corev1.Binding
	if _, err := decodeBody(r, &b, corev1.SchemeGroupVersion.WithKind("Binding"), validationIgnore); err != nil {
		writeError(w, err)
		return
	}
	if b.Name != "" && b.Name != info.Name {
		writeError(w, apierrors.NewBadRequest(fmt.Sprintf("binding name %q does not match pod %q", b.Name, info.Name)))
		return
	}
	if b.Target.Name == "" || (b.Target.Kind != "" && b.Target.Kind != "Node") {
		writeError(w, apierrors.NewBadRequest("binding target must name a Node"))
		return
	}
	dry, err := dryRun(r)
	if err != nil {
		writeError(w, err)
		return
	}
	_, err = s.update(r.Context(), res, info.Namespace, info.Name, updateOptions{subresource: "binding", dryRun: dry}, func(cur runtime.Object) (runtime.Object, error) {
		pod := cur.(*corev1.Pod)
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(res.GroupResource(), pod.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(res.GroupResource(), pod.Name, fmt.Errorf("pod %s is already assigned to node %q", pod.Name, pod.Spec.NodeName))
		}
		if b.UID != "" && b.UID != pod.UID {
			return nil, apierrors.NewConflict(res.GroupResource(), pod.Name, fmt.Errorf("binding UID %s does not match pod UID %s", b.UID, pod.UID))
		}
		pod.Spec.NodeName = b.Target.Name
		pod.ResourceVersion = ""
		setPodScheduled(pod)
		return pod, nil
	})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

func setPodScheduled(pod *corev1.Pod) {
	cond := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}
	for i, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			pod.Status.Conditions[i] = cond
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, cond)
}
