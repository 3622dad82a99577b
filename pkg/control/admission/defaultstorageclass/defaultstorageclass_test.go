package defaultstorageclass

import (
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/registry/storage"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func class(name string, age time.Duration, def bool) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name,
		CreationTimestamp: metav1.NewTime(time.Unix(1_700_000_000, 0).Add(-age))}}
	if def {
		sc.Annotations = map[string]string{storage.IsDefaultStorageClassAnnotation: "true"}
	}
	return sc
}

func TestDefault(t *testing.T) {
	for _, tc := range []struct {
		name    string
		classes []*storagev1.StorageClass
		want    string
	}{
		{"none marked", []*storagev1.StorageClass{class("a", 0, false)}, ""},
		{"one marked", []*storagev1.StorageClass{class("a", 0, false), class("b", time.Hour, true)}, "b"},
		{"newest marked wins", []*storagev1.StorageClass{class("old", time.Hour, true), class("new", time.Minute, true)}, "new"},
		{"same age: first by name", []*storagev1.StorageClass{class("z", 0, true), class("m", 0, true)}, "m"},
	} {
		got := ""
		if d := Default(tc.classes); d != nil {
			got = d.Name
		}
		if got != tc.want {
			t.Errorf("%s: default %q, want %q", tc.name, got, tc.want)
		}
	}
}
