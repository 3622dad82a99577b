// Package admincrd holds the CustomResourceDefinitions of AdminNetworkPolicy and
// BaselineAdminNetworkPolicy (policy.networking.k8s.io/v1alpha1, standard channel) and
// installs them, so that a cluster serves them from its start as distributions that enforce
// them do. The YAML is network-policy-api v0.1.7's, the last release that ships it; v0.3.0,
// whose Go types minilet uses, has the same v1alpha1 schema and ships only the newer
// ClusterNetworkPolicy's.
package admincrd

import (
	"context"
	"embed"
	"fmt"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

//go:embed *.yaml
var files embed.FS

// CRDs are the two definitions.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	entries, err := files.ReadDir(".")
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, e := range entries {
		data, err := files.ReadFile(e.Name())
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// Install creates the definitions the cluster does not have; one it has (perhaps a newer
// one a user applied) is left as it is.
func Install(ctx context.Context, client crdclient.CustomResourceDefinitionsGetter) error {
	crds, err := CRDs()
	if err != nil {
		return err
	}
	for _, crd := range crds {
		_, err := client.CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create customresourcedefinition %s: %w", crd.Name, err)
		}
	}
	return nil
}

// Established tells whether every definition is Established (served); an error names the
// first that is not.
func Established(ctx context.Context, client crdclient.CustomResourceDefinitionsGetter) error {
	crds, err := CRDs()
	if err != nil {
		return err
	}
	for _, want := range crds {
		crd, err := client.CustomResourceDefinitions().Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
			return fmt.Errorf("customresourcedefinition %s is not Established yet", crd.Name)
		}
	}
	return nil
}
