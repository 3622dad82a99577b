package tokencleaner

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

func token(name, expiration string, typ corev1.SecretType) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem, UID: types.UID(name + "-uid")},
		Type: typ, Data: map[string][]byte{bootstrapapi.BootstrapTokenIDKey: []byte("abcdef")}}
	if expiration != "" {
		s.Data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(expiration)
	}
	return s
}

// started is a cleaner over client with its cache synced, stopped when t ends.
func started(t *testing.T, client *fake.Clientset) *Controller {
	t.Helper()
	c, err := New(client, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c.start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		t.Fatal("cache not synced")
	}
	return c
}

func TestSync(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	rfc := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	tok := bootstrapapi.SecretTypeBootstrapToken
	for _, tc := range []struct {
		name    string
		secret  *corev1.Secret
		deleted bool
		again   time.Duration
	}{
		{"expired", token("bootstrap-token-expird", rfc(-time.Second), tok), true, 0},
		{"unparseable expiration", token("bootstrap-token-garbge", "tomorrow", tok), true, 0},
		{"expires in an hour", token("bootstrap-token-inhour", rfc(time.Hour), tok), false, time.Hour},
		{"no expiration", token("bootstrap-token-foreva", "", tok), false, 0},
		{"not a bootstrap token", token("bootstrap-token-opaque", rfc(-time.Hour), corev1.SecretTypeOpaque), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.secret)
			c := started(t, client)
			ctx := t.Context()
			c.now = func() time.Time { return now }
			again, err := c.sync(ctx, tc.secret.Name)
			if err != nil {
				t.Fatal(err)
			}
			if again != tc.again {
				t.Errorf("looked at again after %v, want %v", again, tc.again)
			}
			_, err = client.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, tc.secret.Name, metav1.GetOptions{})
			if gone := apierrors.IsNotFound(err); gone != tc.deleted {
				t.Errorf("deleted = %v (%v), want %v", gone, err, tc.deleted)
			}
			if tc.again > 0 { // once due, it goes
				c.now = func() time.Time { return now.Add(tc.again) }
				if _, err := c.sync(ctx, tc.secret.Name); err != nil {
					t.Fatal(err)
				}
				if _, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, tc.secret.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("still there once due: %v", err)
				}
			}
		})
	}
}

// A token gone meanwhile (from the API, or from the cache too) is no error.
func TestSyncGoneOrReplaced(t *testing.T) {
	old := token("bootstrap-token-abcdef", "2000-01-01T00:00:00Z", bootstrapapi.SecretTypeBootstrapToken)
	client := fake.NewClientset(old)
	c := started(t, client)
	ctx := t.Context()
	if _, err := c.sync(ctx, "bootstrap-token-missing"); err != nil {
		t.Errorf("missing: %v", err)
	}
	if err := client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The lister may still hold it; the delete then finds nothing.
	if _, err := c.sync(ctx, old.Name); err != nil {
		t.Errorf("deleted meanwhile: %v", err)
	}
}
