package certificate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// A node's serving certificate (--rotate-server-certificates): the node requests it with
// its own credentials, miniapi's controllers leave the kubelet-serving request pending
// (as kube-controller-manager does), no TLS handshake succeeds meanwhile, and once an
// admin approves it with the real kubectl the node serves TLS with a certificate of the
// cluster CA naming its host name and IP.
func TestServingCertificateApprovedByAdmin(t *testing.T) {
	c := controlplanetest.Start(t, func(o *controlplane.Options) { o.ClusterSigningDuration = time.Hour })
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodeCfg, err := Rotating(ctx, Options{Kubeconfig: filepath.Join(dir, "kubelet.kubeconfig"), BootstrapKubeconfig: writeBootstrapKubeconfig(t, c, dir),
		CertDir: filepath.Join(dir, "pki"), NodeName: "server", Log: slog.Default()}, func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	node, err := kubernetes.NewForConfig(nodeCfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Serving(ctx, node, filepath.Join(dir, "pki"), "server", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	// (Not httptest's TLS server: it adds a certificate of its own.)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: GetCertificate(m)})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }),
		ErrorLog: slog.NewLogLogger(slog.Default().Handler(), slog.LevelDebug)}
	go srv.Serve(ln)
	defer srv.Close()
	url := "https://" + ln.Addr().String()

	var csr *certificatesv1.CertificateSigningRequest
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := c.Client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		for i, r := range list.Items {
			if r.Spec.SignerName == certificatesv1.KubeletServingSignerName {
				csr = &list.Items[i]
			}
		}
		return csr != nil, err
	}); err != nil {
		t.Fatalf("no kubelet-serving CSR: %v", err)
	}
	if csr.Spec.Username != "system:node:server" {
		t.Errorf("serving CSR requested by %q, want the node system:node:server", csr.Spec.Username)
	}
	time.Sleep(2 * time.Second) // the controllers had their chance to approve it
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.Config.CAData)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "server"}}, Timeout: 5 * time.Second}
	if resp, err := client.Get(url); err == nil {
		resp.Body.Close()
		t.Fatal("TLS handshake succeeded before the serving certificate was approved")
	}
	if out := kubectl(t, c, "get", "csr", csr.Name); !strings.Contains(out, "Pending") {
		t.Fatalf("miniapi's controllers decided the kubelet-serving CSR themselves:\n%s", out)
	}

	kubectl(t, c, "certificate", "approve", csr.Name)
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return m.Current() != nil, nil
	}); err != nil {
		t.Fatalf("no serving certificate after approval: %v", err)
	}
	leaf := m.Current().Leaf
	if leaf.Subject.CommonName != "system:node:server" || len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != "server" ||
		len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("serving certificate for %v, DNS %v, IPs %v", leaf.Subject, leaf.DNSNames, leaf.IPAddresses)
	}
	for _, name := range []string{"server", "127.0.0.1"} { // verified against the CA by both names
		client.Transport.(*http.Transport).TLSClientConfig.ServerName = name
		client.Transport.(*http.Transport).CloseIdleConnections()
		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("TLS to the node as %s: %v", name, err)
		}
		resp.Body.Close()
	}
	if _, err := os.Stat(filepath.Join(dir, "pki", "kubelet-server-current.pem")); err != nil {
		t.Errorf("serving certificate not kept in --cert-dir: %v", err)
	}
}

func kubectl(t *testing.T, c *controlplanetest.Cluster, args ...string) string {
	t.Helper()
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", c.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
