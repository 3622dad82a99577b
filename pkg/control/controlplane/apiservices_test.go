package controlplane

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/controller/controllertest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
)

// apiregistration.k8s.io/v1 is served as kube-apiserver serves it without extension API
// servers: a local APIService for every built-in group version, with upstream's priorities,
// and one for each served version of a CustomResourceDefinition, kept in sync; an APIService
// naming a Service is stored but marked unavailable, as nothing is proxied to it.
func TestAPIServices(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	cfg := c.adminConfig(t)
	client, err := aggregatorclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	apiServices := client.ApiregistrationV1().APIServices()

	resources, err := c.client.Discovery().ServerResourcesForGroupVersion("apiregistration.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range resources.APIResources {
		names = append(names, r.Name)
		if r.Name == "apiservices" && (r.Namespaced || r.Kind != "APIService") {
			t.Errorf("apiservices in discovery: %+v", r)
		}
	}
	if strings.Join(names, ",") != "apiservices,apiservices/status" {
		t.Errorf("apiregistration.k8s.io/v1 resources: %v", names)
	}

	waitFor(t, "local APIServices", func() bool {
		_, errCore := apiServices.Get(ctx, "v1.", metav1.GetOptions{})
		_, errApps := apiServices.Get(ctx, "v1.apps", metav1.GetOptions{})
		return errCore == nil && errApps == nil
	})
	apps, err := apiServices.Get(ctx, "v1.apps", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := apps.Spec; s.Service != nil || s.Group != "apps" || s.Version != "v1" || s.GroupPriorityMinimum != 17800 || s.VersionPriority != 15 {
		t.Errorf("v1.apps spec: %+v", s)
	}
	if len(apps.Status.Conditions) != 1 || apps.Status.Conditions[0].Reason != "Local" || apps.Status.Conditions[0].Status != apiregistrationv1.ConditionTrue {
		t.Errorf("v1.apps status: %+v", apps.Status)
	}
	out := c.mustKubectl(t, "", "get", "apiservices")
	if !regexpLine(out, `^NAME +SERVICE +AVAILABLE +AGE$`) || !regexpLine(out, `^v1\.apps +Local +True +`) || !regexpLine(out, `^v1\.rbac\.authorization\.k8s\.io +Local +True +`) {
		t.Errorf("kubectl get apiservices:\n%s", out)
	}

	// A custom resource's group version gets its APIService, and loses it with its CRD.
	c.mustKubectl(t, widgetsCRD, "apply", "-f", "-")
	waitFor(t, "the CRD's APIService", func() bool {
		got, err := apiServices.Get(ctx, "v1.example.com", metav1.GetOptions{})
		return err == nil && got.Spec.GroupPriorityMinimum == 1000 && got.Spec.VersionPriority == 100 && got.Spec.Service == nil
	})
	c.mustKubectl(t, "", "delete", "crd", "widgets.example.com")
	waitFor(t, "the CRD's APIService gone", func() bool {
		_, err := apiServices.Get(ctx, "v1.example.com", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})

	// An aggregated API is stored, and said to be unavailable rather than pretended served.
	port := int32(443)
	aggregated := &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1.wardle.example.com"},
		Spec: apiregistrationv1.APIServiceSpec{Group: "wardle.example.com", Version: "v1alpha1",
			Service:              &apiregistrationv1.ServiceReference{Namespace: "default", Name: "wardle", Port: &port},
			GroupPriorityMinimum: 2000, VersionPriority: 200, InsecureSkipTLSVerify: true},
	}
	got, err := apiServices.Create(ctx, aggregated, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Status != apiregistrationv1.ConditionFalse || got.Status.Conditions[0].Reason != "ProxyNotSupported" {
		t.Errorf("an aggregated APIService's status: %+v", got.Status)
	}
	// Then kube-aggregator's checks of the Service, with its reasons and words, until
	// all pass but the one miniapi cannot: the proxying.
	available := func(reason, message string) {
		t.Helper()
		var cond apiregistrationv1.APIServiceCondition
		controllertest.WaitFor(t, "Available "+reason, 30*time.Second, func() (bool, string) {
			got, err := apiServices.Get(ctx, aggregated.Name, metav1.GetOptions{})
			if err != nil || len(got.Status.Conditions) != 1 {
				return false, fmt.Sprintf("%v %+v", err, got)
			}
			cond = got.Status.Conditions[0]
			return cond.Reason == reason, fmt.Sprintf("%+v", cond)
		})
		if cond.Type != apiregistrationv1.Available || cond.Status != apiregistrationv1.ConditionFalse || cond.Message != message {
			t.Errorf("condition %s: %+v, want the message %q", reason, cond, message)
		}
	}
	available("ServiceNotFound", `service/wardle in "default" is not present`)
	if out := c.mustKubectl(t, "", "get", "apiservice", "v1alpha1.wardle.example.com"); !regexpLine(out, `^v1alpha1\.wardle\.example\.com +default/wardle +False \(ServiceNotFound\) +`) {
		t.Errorf("kubectl get apiservice:\n%s", out)
	}
	// No selector: its EndpointSlices are the test's to write.
	service := "apiVersion: v1\nkind: Service\nmetadata: {name: wardle}\nspec: {ports: [{name: 443-8443, port: PORT, targetPort: 8443}]}\n"
	c.mustKubectl(t, strings.Replace(service, "PORT", "8443", 1), "apply", "-f", "-")
	available("ServicePortError", `service/wardle in "default" is not listening on port 443`)
	c.mustKubectl(t, strings.Replace(service, "PORT", "443", 1), "apply", "-f", "-")
	available("EndpointsNotFound", `cannot find endpointslices for service/wardle in "default"`)
	slice := `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: wardle-1, labels: {kubernetes.io/service-name: wardle}}
addressType: IPv4
ports: [{name: "443-8443", port: 8443, protocol: TCP}]
endpoints: [{addresses: [10.0.0.9], conditions: {ready: READY}}]
`
	c.mustKubectl(t, strings.Replace(slice, "READY", "false", 1), "apply", "-f", "-")
	available("MissingEndpoints", `endpointslices for service/wardle in "default" have no addresses with port name "443-8443"`)
	c.mustKubectl(t, strings.Replace(slice, "READY", "true", 1), "apply", "-f", "-")
	available("ProxyNotSupported", "minik8s does not proxy API requests to extension API servers: wardle.example.com/v1alpha1 is not served through this API server")
	// kube-aggregator's validation, with its words.
	bad := aggregated.DeepCopy()
	bad.Name, bad.Spec.Group, bad.Spec.GroupPriorityMinimum = "v1alpha1.other.example.com", "other.example.com", 0
	if _, err := apiServices.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000") {
		t.Errorf("an APIService without a group priority: %v", err)
	}
	if err := apiServices.Delete(ctx, got.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
