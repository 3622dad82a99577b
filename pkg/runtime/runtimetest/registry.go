package runtimetest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"golang.org/x/crypto/bcrypt"

	"github.com/minik8s/minik8s/internal/testenv"
)

// Registry is a docker-registry (Debian's package of the CNCF distribution registry)
// a test runs, storing into a directory of the test.
type Registry struct {
	Addr string // host:port on the host's loopback
	dir  string
}

// StartRegistry starts a registry on a free loopback port and waits until it answers.
// With a user, it asks for that user and password (htpasswd). It is stopped when the
// test ends.
func StartRegistry(t testing.TB, user, password string) *Registry {
	t.Helper()
	testenv.RequireTools(t, "docker-registry")
	r := &Registry{dir: t.TempDir()}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.Addr = l.Addr().String()
	l.Close()
	if user != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(r.dir, "htpasswd"), []byte(user+":"+string(hash)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	exited := r.serve(t, "loopback", r.Addr, exec.Command)
	for deadline := time.Now().Add(startTimeout); ; {
		resp, err := http.Get("http://" + r.Addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			return r
		}
		select {
		case <-exited:
			t.Fatalf("docker-registry exited:\n%s", tail(filepath.Join(r.dir, "loopback.log"), 40))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("docker-registry on %s did not answer within %s: %v", r.Addr, startTimeout, err)
		}
	}
}

// ServeAlso starts a second registry process on addr, serving the same storage and
// users, through command (which may run it in a lab namespace, where the first one
// cannot be reached). It does not wait: the caller checks from where addr is reachable.
func (r *Registry) ServeAlso(t testing.TB, name, addr string, command func(program string, args ...string) *exec.Cmd) {
	t.Helper()
	r.serve(t, name, addr, command)
}

// serve runs docker-registry on addr with a config written for it; the returned channel
// closes when it exits.
func (r *Registry) serve(t testing.TB, name, addr string, command func(program string, args ...string) *exec.Cmd) <-chan struct{} {
	t.Helper()
	config := fmt.Sprintf("version: 0.1\nlog: {level: warn}\nstorage: {filesystem: {rootdirectory: %s}}\nhttp: {addr: %q}\n", filepath.Join(r.dir, "data"), addr)
	if htpasswd := filepath.Join(r.dir, "htpasswd"); fileExists(htpasswd) {
		config += fmt.Sprintf("auth: {htpasswd: {realm: minik8s-test, path: %s}}\n", htpasswd)
	}
	configPath := filepath.Join(r.dir, name+".yml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(r.dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := command("docker-registry", "serve", configPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting docker-registry on %s: %v", addr, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("registry log (%s):\n%s", addr, tail(logPath, 40))
		}
	})
	return exited
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// PushImage imports the OCI tarball into a scratch namespace of the containerd at
// address and pushes its image to the registry as remote (host:port/name:tag), with the
// given credentials ("" for none), as `ctr images push --plain-http` would.
func PushImage(t testing.TB, address, tarball, remote, user, password string) {
	t.Helper()
	ctx := namespaces.WithNamespace(context.Background(), "minik8s-test-push")
	client, err := containerd.New(address)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	f, err := os.Open(tarball)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	imgs, err := client.Import(ctx, f)
	if err != nil || len(imgs) != 1 {
		t.Fatalf("importing %s: %d images, %v", tarball, len(imgs), err)
	}
	defer client.ImageService().Delete(ctx, imgs[0].Name, images.SynchronousDelete())
	hosts := docker.ConfigureDefaultRegistries(
		docker.WithPlainHTTP(docker.MatchLocalhost),
		docker.WithAuthorizer(docker.NewDockerAuthorizer(docker.WithAuthCreds(func(string) (string, string, error) { return user, password, nil }))))
	if err := client.Push(ctx, remote, imgs[0].Target, containerd.WithResolver(docker.NewResolver(docker.ResolverOptions{Hosts: hosts}))); err != nil {
		t.Fatalf("pushing %s to %s: %v", tarball, remote, err)
	}
}
