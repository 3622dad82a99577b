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

	"github.com/minik8s/minik8s/pkg/testenv"
)

// StartRegistry starts Debian's docker-registry (the CNCF distribution registry) on a
// free loopback port, storing into a temporary directory, and returns its host:port.
// With a user, it asks for that user and password (htpasswd). The registry is stopped
// when the test ends.
func StartRegistry(t testing.TB, user, password string) string {
	t.Helper()
	testenv.RequireTools(t, "docker-registry")
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	config := fmt.Sprintf("version: 0.1\nlog: {level: warn}\nstorage: {filesystem: {rootdirectory: %s}, delete: {enabled: true}}\nhttp: {addr: %s}\n", filepath.Join(dir, "data"), addr)
	if user != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		htpasswd := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(htpasswd, []byte(user+":"+string(hash)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		config += fmt.Sprintf("auth: {htpasswd: {realm: minik8s-test, path: %s}}\n", htpasswd)
	}
	configPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "registry.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command("docker-registry", "serve", configPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting docker-registry: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("registry log:\n%s", tail(logPath, 40))
		}
	})
	for deadline := time.Now().Add(startTimeout); ; {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			return addr
		}
		select {
		case <-exited:
			t.Fatalf("docker-registry exited:\n%s", tail(logPath, 40))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("docker-registry on %s did not answer within %s: %v", addr, startTimeout, err)
		}
	}
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
