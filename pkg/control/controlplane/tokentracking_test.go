package controlplane

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLegacyTokenTrackingConfigMap: miniapi keeps kube-apiserver's ConfigMap saying since
// when legacy tokens' use is tracked, today's UTC date, and puts right a date that does
// not parse.
func TestLegacyTokenTrackingConfigMap(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	configMaps := c.client.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	since := func(what string, valid func(string) bool) {
		t.Helper()
		var got string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			cm, err := configMaps.Get(ctx, "kube-apiserver-legacy-service-account-token-tracking", metav1.GetOptions{})
			if err == nil {
				if got = cm.Data["since"]; valid(got) {
					return
				}
			}
		}
		t.Fatalf("%s: since %q", what, got)
	}
	today := func(s string) bool {
		return s == time.Now().UTC().Format(time.DateOnly) || s == time.Now().UTC().Add(-time.Minute).Format(time.DateOnly)
	}
	since("made at start", today)
	cm, err := configMaps.Get(ctx, "kube-apiserver-legacy-service-account-token-tracking", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"since": "yesterday"}
	if _, err := configMaps.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	since("a date that does not parse put right", today)
}
