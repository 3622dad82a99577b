package controlplanetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// CreateCRD creates a CustomResourceDefinition of kind (plural plural) in group, its v1
// version served and stored with a schema that keeps every field and with subresources
// (nil for none), deleted when the test ends; it waits until the resource is served and
// returns a client of it.
func (c *Cluster) CreateCRD(t testing.TB, group, plural, kind string, scope apiextensionsv1.ResourceScope, subresources *apiextensionsv1.CustomResourceSubresources) dynamic.NamespaceableResourceInterface {
	t.Helper()
	ctx := context.Background()
	crds := crdclient.NewForConfigOrDie(c.Config).ApiextensionsV1().CustomResourceDefinitions()
	keepAll := true
	crd, err := crds.Create(ctx, &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true, Subresources: subresources,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &keepAll}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = crds.Delete(context.Background(), crd.Name, metav1.DeleteOptions{}) })
	client := dynamic.NewForConfigOrDie(c.Config).Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural})
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err = client.List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	if err != nil {
		t.Fatal(fmt.Errorf("%s not served within 30 s: %w", crd.Name, err))
	}
	return client
}
