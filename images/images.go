// Package images builds the project's own container images from source: pause (the pod
// sandbox), netexec (the test server, with busybox), busybox, coredns (cluster DNS, built
// from the CoreDNS module by images/coredns, a Go module of its own), dnsutils (busybox
// with an nslookup that follows resolv.conf's search list, images/dnsutils) and, in
// E2EDir, the stand-ins for the conformance suite's images (e2eimages.go). There is no registry on
// the machines minik8s runs on, so each image is written as an OCI image-layout tarball
// that minilet imports.
package images

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/minik8s/minik8s/pkg/ociimage"
	"github.com/minik8s/minik8s/pkg/runtime/pauseimage"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// References of the images Build writes.
const (
	PauseRef    = pauseimage.Ref
	NetexecRef  = "localhost/minik8s/netexec:v1"
	BusyboxRef  = "localhost/minik8s/busybox:v1"
	CoreDNSRef  = "localhost/minik8s/coredns:v1"
	DNSUtilsRef = "localhost/minik8s/dnsutils:v1"
)

// Tarball file names Build writes in its output directory, by image reference.
var Tarballs = map[string]string{
	PauseRef:    "pause.tar",
	NetexecRef:  "netexec.tar",
	BusyboxRef:  "busybox.tar",
	CoreDNSRef:  "coredns.tar",
	DNSUtilsRef: "dnsutils.tar",
}

// DefaultBusybox is where Debian's busybox-static package installs its binary.
const DefaultBusybox = "/bin/busybox"

// DefaultBashStatic is where Debian's bash-static package installs its binary.
const DefaultBashStatic = "/bin/bash-static"

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Options configure Build.
type Options struct {
	// OutDir receives the tarballs named in Tarballs.
	OutDir string
	// Busybox is a statically linked busybox binary copied into the images
	// (default DefaultBusybox).
	Busybox string
	// BashStatic is a statically linked bash, /bin/sh of every image that carries busybox
	// (default DefaultBashStatic; busyboxFiles says why).
	BashStatic string
	// Log receives one line per step (default: discarded).
	Log *slog.Logger
}

// Build compiles the Go programs of the images (the working directory must lie inside
// the minik8s module) and writes every image tarball into opts.OutDir.
func Build(ctx context.Context, opts Options) error {
	if opts.Busybox == "" {
		opts.Busybox = DefaultBusybox
	}
	if opts.BashStatic == "" {
		opts.BashStatic = DefaultBashStatic
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return fmt.Errorf("creating output directory: %w", err)
	}
	binDir, err := os.MkdirTemp("", "minik8s-images-")
	if err != nil {
		return fmt.Errorf("creating build directory: %w", err)
	}
	defer os.RemoveAll(binDir)

	busybox, err := readBusybox(ctx, opts.Busybox, opts.BashStatic)
	if err != nil {
		return err
	}
	pause, err := goBuild(ctx, opts.Log, binDir, "pause")
	if err != nil {
		return err
	}
	netexec, err := goBuild(ctx, opts.Log, binDir, "netexec")
	if err != nil {
		return err
	}
	incluster, err := goBuild(ctx, opts.Log, binDir, "incluster")
	if err != nil {
		return err
	}
	nslookup, err := goBuild(ctx, opts.Log, binDir, "dnsutils")
	if err != nil {
		return err
	}
	// Our wget, in place of busybox's: Debian's crashes on -T (images/wget says why).
	wget, err := goBuild(ctx, opts.Log, binDir, "wget")
	if err != nil {
		return err
	}
	busybox.wget = wget
	agnhost, err := goBuild(ctx, opts.Log, binDir, "agnhost")
	if err != nil {
		return err
	}
	nettools, err := goBuild(ctx, opts.Log, binDir, "nettools")
	if err != nil {
		return err
	}
	nnp, err := goBuild(ctx, opts.Log, binDir, "nonewprivs")
	if err != nil {
		return err
	}
	coredns, err := buildCoreDNS(ctx, opts.Log, binDir)
	if err != nil {
		return err
	}

	pauseLayer := baseLayer()
	pauseLayer.File("/pause", 0o755, pause)
	netexecLayer := baseLayer()
	busybox.addTo(netexecLayer)
	netexecLayer.File("/netexec", 0o755, netexec)
	netexecLayer.File("/incluster", 0o755, incluster) // a client-go program for in-cluster access tests
	busyboxLayer := baseLayer()
	busybox.addTo(busyboxLayer)
	dnsutilsLayer := baseLayer()
	busybox.addTo(dnsutilsLayer)
	dnsutilsLayer.File("/usr/bin/nslookup", 0o755, nslookup) // in place of busybox's applet
	corednsLayer := baseLayer()
	corednsLayer.File("/coredns", 0o755, coredns)

	for _, img := range []ociimage.Image{
		{Name: PauseRef, Layer: pauseLayer, Config: ocispec.ImageConfig{
			Entrypoint: []string{"/pause"}, Env: []string{defaultPath}, WorkingDir: "/",
			StopSignal: "SIGTERM",
		}},
		{Name: NetexecRef, Layer: netexecLayer, Config: ocispec.ImageConfig{
			Entrypoint: []string{"/netexec"}, Env: []string{defaultPath}, WorkingDir: "/",
			ExposedPorts: map[string]struct{}{"8080/tcp": {}, "8081/udp": {}},
		}},
		{Name: BusyboxRef, Layer: busyboxLayer, Config: ocispec.ImageConfig{
			Cmd: []string{"sh"}, Env: []string{defaultPath}, WorkingDir: "/",
		}},
		{Name: DNSUtilsRef, Layer: dnsutilsLayer, Config: ocispec.ImageConfig{
			Cmd: []string{"sh"}, Env: []string{defaultPath}, WorkingDir: "/",
		}},
		{Name: CoreDNSRef, Layer: corednsLayer, Config: ocispec.ImageConfig{
			Entrypoint: []string{"/coredns"}, Env: []string{defaultPath}, WorkingDir: "/",
			ExposedPorts: map[string]struct{}{"53/udp": {}, "53/tcp": {}, "9153/tcp": {}},
		}},
	} {
		if err := writeTarball(opts.Log, filepath.Join(opts.OutDir, Tarballs[img.Name]), img); err != nil {
			return err
		}
	}
	e2e, err := e2eImages(busybox, agnhost, netexec, nettools, nnp, pause)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(opts.OutDir, E2EDir), 0o755); err != nil {
		return err
	}
	for _, img := range e2e {
		if err := writeTarball(opts.Log, filepath.Join(opts.OutDir, E2EDir, E2ETarballs[img.Name]), img); err != nil {
			return err
		}
	}
	return nil
}

// baseLayer holds what every image needs: the mount points a runtime expects and a
// root user.
func baseLayer() *ociimage.Layer {
	l := ociimage.NewLayer()
	for _, dir := range []string{"/dev", "/proc", "/sys", "/etc", "/root", "/var"} {
		l.Dir(dir, 0o755)
	}
	l.Dir("/tmp", 0o1777)
	l.File("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"))
	l.File("/etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n"))
	return l
}

// busyboxFiles is a busybox binary and the applet links it names itself, with bash as
// /bin/sh. Debian's busybox ash runs its own applets before any program on PATH, so in
// `sh -c` its wget applet would run in place of ours (and die of a segmentation fault on
// -T, images/wget says why), and it drops variables whose names are no shell identifiers
// (`data-1` of a ConfigMap's envFrom), which upstream busybox 1.37's ash keeps: Debian
// reverts that change (busybox commit 9c143ce52). bash, run as sh (POSIX mode), finds
// programs on PATH and keeps such variables.
type busyboxFiles struct {
	binary  []byte
	applets []string // paths relative to the root, e.g. bin/sh
	wget    []byte   // in place of the wget applet
	sh      []byte   // in place of the sh applet
}

func readBusybox(ctx context.Context, path, bashPath string) (busyboxFiles, error) {
	binary, err := os.ReadFile(path)
	if err != nil {
		return busyboxFiles{}, fmt.Errorf("reading busybox (install Debian's busybox-static): %w", err)
	}
	out, err := exec.CommandContext(ctx, path, "--list-full").Output()
	if err != nil {
		return busyboxFiles{}, fmt.Errorf("listing applets of %s: %w", path, err)
	}
	bash, err := os.ReadFile(bashPath)
	if err != nil {
		return busyboxFiles{}, fmt.Errorf("reading bash (install Debian's bash-static): %w", err)
	}
	return busyboxFiles{binary: binary, applets: strings.Fields(string(out)), sh: bash}, nil
}

func (b busyboxFiles) addTo(l *ociimage.Layer) {
	l.File("/bin/busybox", 0o755, b.binary)
	for _, applet := range b.applets {
		switch {
		case applet == "bin/busybox":
		case path.Base(applet) == "wget" && b.wget != nil:
			l.File("/"+applet, 0o755, b.wget)
		case applet == "bin/sh" && b.sh != nil:
			l.File("/bin/sh", 0o755, b.sh)
		default:
			l.Symlink(applet, "/bin/busybox")
		}
	}
}

// allInBin is b with every applet in /bin, as the official busybox image lays them out
// (the e2e suite runs /bin/sysctl in it).
func (b busyboxFiles) allInBin() busyboxFiles {
	out := b
	out.applets = make([]string, len(b.applets))
	for i, applet := range b.applets {
		out.applets[i] = "bin/" + path.Base(applet)
	}
	return out
}

// goBuild compiles ./images/NAME statically into dir and returns the binary.
func goBuild(ctx context.Context, log *slog.Logger, dir, name string) ([]byte, error) {
	out := filepath.Join(dir, name)
	pkg := "github.com/minik8s/minik8s/images/" + name
	log.Info("compiling", "package", pkg)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s: %w: %s", pkg, err, strings.TrimSpace(stderr.String()))
	}
	return os.ReadFile(out)
}

// buildCoreDNS compiles images/coredns, a module of its own (CoreDNS's dependencies stay out
// of ours), statically into dir. The first build takes minutes; the go build cache makes
// later ones take about a second until its sources change.
func buildCoreDNS(ctx context.Context, log *slog.Logger, dir string) ([]byte, error) {
	out := filepath.Join(dir, "coredns")
	list := exec.CommandContext(ctx, "go", "list", "-f", "{{.Dir}}", "github.com/minik8s/minik8s/images")
	imagesDir, err := list.Output()
	if err != nil {
		return nil, fmt.Errorf("finding the images directory: %w", err)
	}
	src := filepath.Join(strings.TrimSpace(string(imagesDir)), "coredns")
	log.Info("compiling CoreDNS (minutes the first time, then cached)", "module", src)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w", "-o", out, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s: %w: %s", src, err, strings.TrimSpace(stderr.String()))
	}
	return os.ReadFile(out)
}

// writeTarball writes img to path unless the tarball there was written from the same
// image: compressing a large layer (coredns) costs seconds on every `make images`.
func writeTarball(log *slog.Logger, path string, img ociimage.Image) error {
	key, err := imageKey(img)
	if err != nil {
		return err
	}
	keyPath := path + ".key"
	if old, err := os.ReadFile(keyPath); err == nil && string(old) == key {
		if _, err := os.Stat(path); err == nil {
			log.Info("image unchanged", "image", img.Name, "file", path)
			return nil
		}
	}
	if err := writeLayout(log, path, img); err != nil {
		return err
	}
	return os.WriteFile(keyPath, []byte(key), 0o644)
}

// imageKey digests everything an image tarball is made from.
func imageKey(img ociimage.Image) (string, error) {
	layer, err := img.Layer.DiffID()
	if err != nil {
		return "", err
	}
	config, err := json.Marshal(img.Config)
	if err != nil {
		return "", err
	}
	return digest.FromString(img.Name + "\n" + layer.String() + "\n" + string(config)).String(), nil
}

func writeLayout(log *slog.Logger, path string, img ociimage.Image) error {
	var buf bytes.Buffer
	manifest, err := ociimage.WriteLayout(&buf, img)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	log.Info("wrote image", "image", img.Name, "file", path, "manifest", manifest.Digest.String(), "bytes", buf.Len())
	return nil
}
