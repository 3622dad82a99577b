package images

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"path"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/ociimage"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// E2EDir is the directory under Options.OutDir holding the conformance suite's images
// (docs/conformance.md): ours, named as the Kubernetes v1.36 e2e suite names the images
// it runs, so that nodes find them already present and never pull.
const E2EDir = "e2e"

// E2ETarballs are the tarballs of E2EDir, by the upstream image reference each stands for.
var E2ETarballs = map[string]string{
	"registry.k8s.io/e2e-test-images/agnhost:2.63.0":          "agnhost-2.63.0.tar",
	"registry.k8s.io/e2e-test-images/agnhost:2.55":            "agnhost-2.55.tar",
	"registry.k8s.io/e2e-test-images/busybox:1.37.0-1":        "busybox-1.37.0-1.tar",
	"registry.k8s.io/e2e-test-images/glibc-dns-testing:2.0.0": "glibc-dns-testing-2.0.0.tar",
	"registry.k8s.io/e2e-test-images/kitten:1.8":              "kitten-1.8.tar",
	"registry.k8s.io/e2e-test-images/nautilus:1.8":            "nautilus-1.8.tar",
	"registry.k8s.io/e2e-test-images/nginx:1.15-4":            "nginx-1.15-4.tar",
	"registry.k8s.io/e2e-test-images/nginx:1.27-0":            "nginx-1.27-0.tar",
	"registry.k8s.io/e2e-test-images/nonewprivs:1.4":          "nonewprivs-1.4.tar",
	"registry.k8s.io/pause:3.10.2":                            "pause-3.10.2.tar",
}

// nnpPath is where the nonewprivs image holds its program, as upstream's.
const nnpPath = "/usr/local/bin/nnp"

// suiteShell makes l's /bin/sh images/nettools' sh: busybox ash, whose messages the suite's
// tests expect ("/bin/sh: can't create /file: Read-only file system"), or bash, installed
// beside it, when ash would drop a variable the tests look for (images/nettools/sh.go).
func suiteShell(l *ociimage.Layer, nettools, bash []byte) {
	l.File("/usr/bin/nettools", 0o755, nettools)
	l.File("/bin/bash", 0o755, bash)
	l.Symlink("/bin/sh", "/usr/bin/nettools")
}

// e2eImages are the images of E2ETarballs: agnhost is images/agnhost with our netexec,
// busybox and images/nettools beside it (the suite runs shell commands, curl and nc in
// agnhost pods too) and a self-signed localhost certificate at /localhost.crt and
// /localhost.key as upstream's image has; nginx is busybox's httpd serving /usr/share/nginx/html on port 80;
// nonewprivs is images/nonewprivs installed setuid and setgid root (upstream: chmod +s) at
// /usr/local/bin/nnp, the command it runs, beside busybox (upstream's is Alpine). Their
// /bin/sh is bash as in all our images (busyboxFiles says why), but agnhost's and
// busybox's, where it is suiteShell's.
func e2eImages(busybox busyboxFiles, agnhost, netexec, nettools, nnp, pause []byte) ([]ociimage.Image, error) {
	cert, key, err := localhostCertificate()
	if err != nil {
		return nil, err
	}
	newAgnhostLayer := func() *ociimage.Layer {
		agnhostLayer := baseLayer()
		busybox.addTo(agnhostLayer)
		agnhostLayer.File("/agnhost", 0o755, agnhost)
		agnhostLayer.File("/agnhost-2", 0o755, agnhost) // the Containers tests override the entrypoint with it
		agnhostLayer.File("/netexec", 0o755, netexec)
		// curl, dig, getent, a full nc, and a sh that prefers them to busybox's applets
		// (images/nettools).
		suiteShell(agnhostLayer, nettools, busybox.sh)
		for _, name := range []string{"/usr/bin/curl", "/usr/bin/dig", "/usr/bin/getent", "/usr/bin/nc"} {
			agnhostLayer.Symlink(name, "/usr/bin/nettools")
		}
		agnhostLayer.File("/localhost.crt", 0o644, cert)
		agnhostLayer.File("/localhost.key", 0o600, key)
		// As upstream's image: a user and group the supplemental-groups tests expect of the
		// image, and `pause` when a pod names no command (the HostPort test's host pod).
		agnhostLayer.File("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"+
			"user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n"))
		agnhostLayer.File("/etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\nuser-defined-in-image:x:1000:\n"+
			"group-defined-in-image:x:50000:user-defined-in-image\n"))
		return agnhostLayer
	}
	agnhostLayer := newAgnhostLayer()
	agnhostConfig := ocispec.ImageConfig{Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}, Env: []string{defaultPath}, WorkingDir: "/"}

	busyboxLayer := baseLayer()
	busybox.allInBin().addTo(busyboxLayer)
	suiteShell(busyboxLayer, nettools, busybox.sh)
	busyboxConfig := ocispec.ImageConfig{Cmd: []string{"sh"}, Env: []string{defaultPath}, WorkingDir: "/"}

	nginxLayer := baseLayer()
	busybox.addTo(nginxLayer)
	nginxLayer.Dir("/usr/share/nginx/html", 0o755)
	nginxLayer.File("/usr/share/nginx/html/index.html", 0o644, []byte("<html><body>Welcome to nginx!</body></html>\n"))
	nginxConfig := ocispec.ImageConfig{Cmd: []string{"httpd", "-f", "-p", "80", "-h", "/usr/share/nginx/html"},
		Env: []string{defaultPath}, WorkingDir: "/", ExposedPorts: map[string]struct{}{"80/tcp": {}}}

	nonewprivsLayer := baseLayer()
	busybox.addTo(nonewprivsLayer)
	nonewprivsLayer.File(nnpPath, 0o6755, nnp)
	nonewprivsConfig := ocispec.ImageConfig{Cmd: []string{path.Base(nnpPath)}, Env: []string{defaultPath}, WorkingDir: "/"}

	pauseLayer := baseLayer()
	pauseLayer.File("/pause", 0o755, pause)
	pauseConfig := ocispec.ImageConfig{Entrypoint: []string{"/pause"}, Env: []string{defaultPath}, WorkingDir: "/", StopSignal: "SIGTERM"}

	// The update-demo images (upstream: agnhost with the picture and its data.json beside
	// it, serving them with test-webserver); the Update Demo tests read data.json through
	// the pods' proxy. The picture is a stand-in: no test looks at it.
	updateDemo := func(picture string) *ociimage.Layer {
		l := newAgnhostLayer()
		l.File("/"+picture, 0o644, []byte("a stand-in for the update demo's "+picture+"\n"))
		l.File("/data.json", 0o644, []byte(`{"image": "`+picture+`"}`+"\n"))
		return l
	}
	updateDemoConfig := agnhostConfig
	updateDemoConfig.Cmd = []string{"test-webserver"}

	layers := map[string]struct {
		layer  *ociimage.Layer
		config ocispec.ImageConfig
	}{
		"agnhost": {agnhostLayer, agnhostConfig},
		"busybox": {busyboxLayer, busyboxConfig},
		// The DNS tests' second querier (upstream: Debian with BIND's dig): the same tools.
		"glibc-dns-testing": {agnhostLayer, busyboxConfig},
		"nginx":             {nginxLayer, nginxConfig},
		"nautilus":          {updateDemo("nautilus.jpg"), updateDemoConfig},
		"kitten":            {updateDemo("kitten.jpg"), updateDemoConfig},
		"nonewprivs":        {nonewprivsLayer, nonewprivsConfig},
		"pause":             {pauseLayer, pauseConfig},
	}
	var out []ociimage.Image
	for ref := range E2ETarballs {
		name, _, _ := strings.Cut(path.Base(ref), ":") // agnhost
		l := layers[name]
		out = append(out, ociimage.Image{Name: ref, Layer: l.layer, Config: l.config})
	}
	return out, nil
}

// localhostCertificate is a self-signed certificate for localhost and its key, in PEM.
func localhostCertificate() (cert, key []byte, err error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(10, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
