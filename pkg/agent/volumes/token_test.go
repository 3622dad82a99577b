package volumes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/minik8s/minik8s/internal/testenv"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// TestServiceAccountToken: the projected token comes from TokenRequest bound to the pod,
// is reused until 80% of its lifetime, then renewed.
func TestServiceAccountToken(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	client := fake.NewClientset()
	var got []*authnv1.TokenRequest
	client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		req := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenRequest).DeepCopy()
		got = append(got, req)
		req.CreationTimestamp = metav1.NewTime(now)
		req.Status = authnv1.TokenRequestStatus{Token: fmt.Sprintf("token-%d", len(got)),
			ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second))}
		return true, req, nil
	})
	m := New(t.TempDir(), client, nil, clock.RealClock{})
	m.tokens.now = func() time.Time { return now }
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-1"}, Spec: corev1.PodSpec{ServiceAccountName: "robot"}}
	src := &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](1000), Audience: "vault"}
	read := func() string {
		files, err := m.tokenFile(context.Background(), pod, src, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		return string(files["token"].Data)
	}
	if tok := read(); tok != "token-1" {
		t.Fatalf("first token %q", tok)
	}
	r := got[0]
	if b := r.Spec.BoundObjectRef; b == nil || b.Kind != "Pod" || b.Name != "p" || b.UID != "uid-1" || len(r.Spec.Audiences) != 1 || r.Spec.Audiences[0] != "vault" {
		t.Errorf("request %+v", r.Spec)
	}
	now = now.Add(799 * time.Second)
	if tok := read(); tok != "token-1" || len(got) != 1 {
		t.Errorf("before 80%% of its life: %q after %d requests, want the same token from 1", tok, len(got))
	}
	now = now.Add(2 * time.Second)
	if tok := read(); tok != "token-2" {
		t.Errorf("after 80%% of its life: %q, want a renewed token", tok)
	}
}

// TestTokenFileModeUnderFSGroupAndRunAsUser: as the kubelet's projected volume, a
// token is 0600 when the pod has an fsGroup or one runAsUser for all its containers,
// owned by that user; fsGroup then makes it 0640 (the default 0644 otherwise). Files
// the fsGroup walk changed are not rewritten at every sync.
func TestTokenFileModeUnderFSGroupAndRunAsUser(t *testing.T) {
	testenv.RequireRoot(t, "chown and mount tmpfs")
	client := fake.NewClientset()
	client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		req := a.(k8stesting.CreateAction).GetObject().(*authnv1.TokenRequest).DeepCopy()
		req.Status = authnv1.TokenRequestStatus{Token: "tok", ExpirationTimestamp: metav1.NewTime(time.Now().Add(time.Hour))}
		return true, req, nil
	})
	for _, tc := range []struct {
		name     string
		sc       *corev1.PodSecurityContext
		mode     os.FileMode
		uid, gid uint32
	}{
		{"plain", nil, 0o644, 0, 0},
		{"fsgroup", &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}, 0o640, 0, 2000},
		{"runasuser", &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}, 0o600, 1000, 0},
		{"both", &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000)}, 0o640, 1000, 2000},
	} {
		m := New(t.TempDir(), client, nil, clock.RealClock{})
		pod := volumePod(corev1.Volume{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr.To[int32](0o644),
			Sources:     []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)}}},
		}}})
		pod.UID = types.UID("uid-" + tc.name)
		pod.Spec.SecurityContext = tc.sc
		vols, err := m.SetUp(context.Background(), pod)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.TearDown(string(pod.UID)) })
		data, _ := os.Readlink(filepath.Join(vols["t"].Path, "..data"))
		fi, err := os.Stat(filepath.Join(vols["t"].Path, "token"))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm() != tc.mode || st.Uid != tc.uid || st.Gid != tc.gid {
			t.Errorf("%s: token %v %d:%d, want %v %d:%d", tc.name, fi.Mode().Perm(), st.Uid, st.Gid, tc.mode, tc.uid, tc.gid)
		}
		if _, err := m.SetUp(context.Background(), pod); err != nil {
			t.Fatal(err)
		}
		if again, _ := os.Readlink(filepath.Join(vols["t"].Path, "..data")); again != data {
			t.Errorf("%s: the unchanged token was written again (%s, then %s)", tc.name, data, again)
		}
	}
}
