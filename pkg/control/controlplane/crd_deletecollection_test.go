package controlplane

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	crdclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestCustomResourceDeleteCollectionItems: the answer to a deletecollection of custom
// resources lists them as apiextensions-apiserver's unstructured list does, each item with
// its kind and apiVersion (a built-in kind's typed items have neither).
func TestCustomResourceDeleteCollectionItems(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	admin := c.adminConfig(t)
	if _, err := crdclient.NewForConfigOrDie(admin).ApiextensionsV1().CustomResourceDefinitions().Create(ctx, knobsCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitEstablished(t, "crd/knobs.defaulting.example.com")
	knobs := customResources(admin, "defaulting.example.com", "v1", "knobs")
	for _, name := range []string{"a", "b"} {
		knob := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "defaulting.example.com/v1", "kind": "Knob",
			"metadata": map[string]any{"name": name, "labels": map[string]any{"dc": "yes"}}}}
		var err error
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if _, err = knobs.Create(ctx, knob, metav1.CreateOptions{}); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	code, body := c.raw(t, "DELETE", "/apis/defaulting.example.com/v1/namespaces/default/knobs?labelSelector=dc%3Dyes", "")
	var got struct {
		Kind, APIVersion string
		Items            []map[string]any
	}
	if err := json.Unmarshal(body, &got); err != nil || code != http.StatusOK || got.Kind != "KnobList" || len(got.Items) != 2 {
		t.Fatalf("deletecollection: %d %v: %s", code, err, body)
	}
	for _, item := range got.Items {
		if item["kind"] != "Knob" || item["apiVersion"] != "defaulting.example.com/v1" {
			t.Errorf("item names kind %v, apiVersion %v", item["kind"], item["apiVersion"])
		}
	}
}
