package controlplane

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/store/etcdtest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The store's history is compacted by time on both engines, as kube-apiserver compacts
// etcd's: a continue token then expires (410 Expired) with a token that goes on at the
// present, what the conformance test "API chunking ... compacted away" waits for.
func TestContinueTokenExpiresByCompaction(t *testing.T) {
	const interval = 300 * time.Millisecond
	t.Run("Bolt", func(t *testing.T) {
		testContinueTokenExpires(t, startClusterWith(t, func(o *Options) { o.CompactionInterval = interval }), interval)
	})
	t.Run("Etcd", func(t *testing.T) {
		etcd := etcdtest.ForTest(t)
		testContinueTokenExpires(t, startClusterWith(t, func(o *Options) {
			o.Store, o.CompactionInterval = "etcd://"+strings.Join(etcd.HostPorts, ","), interval
		}), interval)
	})
}

func testContinueTokenExpires(t *testing.T, c *cluster, interval time.Duration) {
	ctx := context.Background()
	// PodTemplates in a namespace of their own, as the conformance test: no selector, so
	// every page counts the items left.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "chunking"}}
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	templates := c.client.CoreV1().PodTemplates(ns.Name)
	const total, limit = 5, 2
	for i := range total {
		pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("template-%d", i)},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}
		if _, err := templates.Create(ctx, pt, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := templates.List(ctx, metav1.ListOptions{Limit: limit})
	if err != nil || first.Continue == "" {
		t.Fatalf("first page: %v, continue %q", err, first.Continue)
	}
	names := func(l *corev1.PodTemplateList) (out []string) {
		for _, pt := range l.Items {
			out = append(out, pt.Name)
		}
		return out
	}
	got := names(first)

	// Writes move the revision past the first page's, which two compactions then drop.
	cms := c.client.CoreV1().ConfigMaps("default")
	tick := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "tick"}}
	if tick, err = cms.Create(ctx, tick, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var inconsistent string
	for deadline := time.Now().Add(30 * time.Second); inconsistent == ""; {
		if time.Now().After(deadline) {
			t.Fatalf("the first page's continue token did not expire in 30 s with compaction every %s", interval)
		}
		tick.Data = map[string]string{"at": time.Now().String()}
		if tick, err = cms.Update(ctx, tick, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := templates.List(ctx, metav1.ListOptions{Limit: limit, Continue: first.Continue})
		var status apierrors.APIStatus
		switch {
		case err == nil:
			time.Sleep(interval / 6) // compaction is by time: a few writes and tries per interval
		case !apierrors.IsResourceExpired(err) || !errors.As(err, &status):
			t.Fatalf("continue of a compacted list: %v, want 410 Expired", err)
		case status.Status().Continue == "":
			t.Fatalf("the 410 of a compacted continue token carries no token: %v", err)
		default:
			inconsistent = status.Status().Continue
		}
	}

	// The new token goes on after the first page, at the present, and its pages are one
	// snapshot again.
	var rv string
	for next := inconsistent; next != ""; {
		page, err := templates.List(ctx, metav1.ListOptions{Limit: limit, Continue: next})
		if err != nil {
			t.Fatalf("page after %v: %v", got, err)
		}
		if page.ResourceVersion == first.ResourceVersion || (rv != "" && page.ResourceVersion != rv) {
			t.Errorf("page resourceVersion %s: want a new one (first page %s), the same on every page (%s)", page.ResourceVersion, first.ResourceVersion, rv)
		}
		rv = page.ResourceVersion
		if remaining := page.RemainingItemCount; page.Continue != "" && (remaining == nil || int(*remaining)+len(got)+len(page.Items) != total) {
			t.Errorf("page after %v: remainingItemCount %v", got, remaining)
		}
		got = append(got, names(page)...)
		if next = page.Continue; len(got) > 2*total {
			t.Fatalf("pages do not end: %v", got)
		}
	}
	if want := []string{"template-0", "template-1", "template-2", "template-3", "template-4"}; !slices.Equal(got, want) {
		t.Errorf("pages: %v, want %v", got, want)
	}
}
