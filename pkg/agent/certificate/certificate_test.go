package certificate

import (
	"context"
	"crypto/x509"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

// writeBootstrapKubeconfig makes a bootstrap token Secret and a kubeconfig that uses it.
func writeBootstrapKubeconfig(t *testing.T, c *controlplanetest.Cluster, dir string) string {
	t.Helper()
	_, err := c.Client.CoreV1().Secrets("kube-system").Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-07401b"},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		StringData: map[string]string{"token-id": "07401b", "token-secret": "f395accd246ae52d",
			"usage-bootstrap-authentication": "true", "expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "bootstrap.kubeconfig")
	cfg := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: c.Config.Host, CertificateAuthorityData: c.Config.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": {Token: "07401b.f395accd246ae52d"}},
		Contexts:       map[string]*clientcmdapi.Context{"x": {Cluster: "c", AuthInfo: "u"}},
		CurrentContext: "x",
	}
	if err := clientcmd.WriteToFile(cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func whoami(t *testing.T, cfg *rest.Config) (string, error) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return r.Status.UserInfo.Username, nil
}

func currentCert(t *testing.T, dir string) *x509.Certificate {
	t.Helper()
	certs, err := certutil.CertsFromFile(filepath.Join(dir, "kubelet-client-current.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return certs[0]
}

// A node given only a bootstrap kubeconfig gets its certificate and kubeconfig, renews
// the certificate before it expires (--cluster-signing-duration 60s) and keeps working
// past the first certificate's expiry on the same client; a restart finds the written
// kubeconfig valid and does not bootstrap again.
func TestBootstrapAndRotation(t *testing.T) {
	c := controlplanetest.Start(t, func(o *controlplane.Options) { o.ClusterSigningDuration = time.Minute })
	dir := t.TempDir()
	boot := writeBootstrapKubeconfig(t, c, dir)
	o := Options{Kubeconfig: filepath.Join(dir, "kubelet.kubeconfig"), BootstrapKubeconfig: boot,
		CertDir: filepath.Join(dir, "pki"), NodeName: "joiner", Log: slog.Default(), checkPeriod: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	failed := make(chan error, 1)
	cfg, err := Rotating(ctx, o, func(err error) { failed <- err })
	if err != nil {
		t.Fatal(err)
	}
	if user, err := whoami(t, cfg); err != nil || user != "system:node:joiner" {
		t.Fatalf("after bootstrap the client is %q (%v), want system:node:joiner", user, err)
	}
	// The written kubeconfig is the node's credentials on its own.
	written, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if user, err := whoami(t, written); err != nil || user != "system:node:joiner" {
		t.Fatalf("the written --kubeconfig is %q (%v), want system:node:joiner", user, err)
	}
	first := currentCert(t, o.CertDir)
	t.Logf("first certificate: %s .. %s", first.NotBefore.Format(time.TimeOnly), first.NotAfter.Format(time.TimeOnly))

	deadline := first.NotAfter.Add(30 * time.Second)
	var renewed *x509.Certificate
	for time.Now().Before(deadline) {
		if cur := currentCert(t, o.CertDir); cur.SerialNumber.Cmp(first.SerialNumber) != 0 {
			renewed = cur
			break
		}
		time.Sleep(time.Second)
	}
	if renewed == nil {
		t.Fatalf("the certificate (until %s) was not renewed", first.NotAfter.Format(time.TimeOnly))
	}
	lifetime := first.NotAfter.Sub(first.NotBefore)
	at := time.Since(first.NotBefore)
	t.Logf("renewed %v into a %v lifetime (%.0f%%): new certificate until %s", at.Round(time.Second), lifetime, 100*at.Seconds()/lifetime.Seconds(), renewed.NotAfter.Format(time.TimeOnly))
	if at > lifetime {
		t.Errorf("renewed only after expiry")
	}
	// Past the first certificate's expiry, the same client still gets in.
	time.Sleep(time.Until(first.NotAfter.Add(2 * time.Second)))
	if user, err := whoami(t, cfg); err != nil || user != "system:node:joiner" {
		t.Fatalf("after the first certificate expired the client is %q (%v)", user, err)
	}
	select {
	case err := <-failed:
		t.Fatalf("rotation gave up: %v", err)
	default:
	}
	// A restart: the kubeconfig written before is still valid, the bootstrap one is unused.
	certConfig, _, err := LoadClientConfig(o.Kubeconfig, "/nonexistent/bootstrap.kubeconfig", o.CertDir, slog.Default())
	if err != nil {
		t.Fatalf("restart with a valid --kubeconfig: %v", err)
	}
	if user, err := whoami(t, certConfig); err != nil || user != "system:node:joiner" {
		t.Fatalf("restart: %q %v", user, err)
	}
}
