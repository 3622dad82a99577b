package controlplane

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/internal/freeport"
	"github.com/minik8s/minik8s/pkg/control/store"
	"github.com/minik8s/minik8s/pkg/control/store/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// secretPlaintext is what the tests' secrets hold; the stores must never contain it, in
// the clear nor base64-encoded as a Secret's JSON carries it.
const secretPlaintext = "correct-horse-battery-staple"

func encryptionKey(seed byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{seed}, 32))
}

// writeEncryptionConfig writes an EncryptionConfiguration for secrets with providers
// (YAML list items) and returns its path.
func writeEncryptionConfig(t *testing.T, providers string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "encryption.yaml")
	cfg := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n" + providers
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func aescbcProvider(keys ...string) string {
	s := "  - aescbc:\n      keys:\n"
	for _, k := range keys {
		s += fmt.Sprintf("      - name: %s\n        secret: %s\n", k, encryptionKey(k[len(k)-1]))
	}
	return s
}

func assertNoPlaintext(t *testing.T, where string, data []byte) {
	t.Helper()
	for _, p := range []string{secretPlaintext, base64.StdEncoding.EncodeToString([]byte(secretPlaintext))} {
		if bytes.Contains(data, []byte(p)) {
			t.Fatalf("%s holds the secret's plaintext %q", where, p)
		}
	}
}

// storedSecret reads the stored value of default/creds straight from the bolt file.
func storedSecret(t *testing.T, dataDir string) []byte {
	t.Helper()
	raw, err := store.OpenBolt(filepath.Join(dataDir, "state.db"), store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	kv, err := raw.Get(context.Background(), "/registry/core/secrets/default/creds")
	if err != nil {
		t.Fatal(err)
	}
	return kv.Value
}

// With --encryption-provider-config, a secret created with kubectl is stored encrypted
// (the bolt file holds no plaintext anywhere, its value has the k8s:enc: prefix), reads
// back unchanged, and survives a key rotation done as Kubernetes documents it: the new
// key first and the old one second, every secret rewritten, then the old key removed.
func TestSecretsEncryptedAtRest(t *testing.T) {
	m := newRestartable(t, func(o *Options) {
		o.EncryptionProviderConfig = writeEncryptionConfig(t, aescbcProvider("key1")+"  - identity: {}\n")
	})
	c := m.start()
	c.mustKubectl(t, "", "create", "secret", "generic", "creds", "--from-literal=password="+secretPlaintext)
	c.mustKubectl(t, "", "create", "configmap", "plain", "--from-literal=note=not-a-secret")
	readBack := func(c *cluster) {
		t.Helper()
		out := c.mustKubectl(t, "", "get", "secret", "creds", "-o", "jsonpath={.data.password}")
		if got, _ := base64.StdEncoding.DecodeString(out); string(got) != secretPlaintext {
			t.Fatalf("kubectl get secret: password %q, want %q", got, secretPlaintext)
		}
	}
	readBack(c)
	m.stop()

	file, err := os.ReadFile(filepath.Join(m.o.DataDir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	assertNoPlaintext(t, "state.db", file)
	if !bytes.Contains(file, []byte("not-a-secret")) {
		t.Fatal("state.db: the configmap, not named by the configuration, should be stored as it is")
	}
	if v := storedSecret(t, m.o.DataDir); !bytes.HasPrefix(v, []byte("k8s:enc:aescbc:v1:key1:")) {
		t.Fatalf("stored secret starts %q, want k8s:enc:aescbc:v1:key1:", v[:min(len(v), 30)])
	}

	// Rotation, step 1: key2 writes, key1 still reads.
	m.o.EncryptionProviderConfig = writeEncryptionConfig(t, aescbcProvider("key2", "key1"))
	c = m.start()
	readBack(c)
	all := c.mustKubectl(t, "", "get", "secrets", "-A", "-o", "json")
	if out := c.mustKubectl(t, all, "replace", "-f", "-"); !strings.Contains(out, "secret/creds replaced") {
		t.Fatalf("kubectl replace: %s", out)
	}
	m.stop()
	if v := storedSecret(t, m.o.DataDir); !bytes.HasPrefix(v, []byte("k8s:enc:aescbc:v1:key2:")) {
		t.Fatalf("after the rewrite, the stored secret starts %q, want k8s:enc:aescbc:v1:key2:", v[:min(len(v), 30)])
	}

	// Step 2: key1 is gone; the rewritten secret still reads.
	m.o.EncryptionProviderConfig = writeEncryptionConfig(t, aescbcProvider("key2"))
	c = m.start()
	readBack(c)
}

// On etcd the value etcd holds (read with the etcd client) is ciphertext too.
func TestSecretsEncryptedAtRestOnEtcd(t *testing.T) {
	etcd := etcdtest.ForTest(t)
	cfg := writeEncryptionConfig(t, fmt.Sprintf("  - secretbox:\n      keys:\n      - name: box1\n        secret: %s\n", encryptionKey(7)))
	c := startClusterWith(t, func(o *Options) {
		o.Store = "etcd://" + strings.Join(etcd.HostPorts, ",")
		o.EncryptionProviderConfig = cfg
	})
	c.mustKubectl(t, "", "create", "secret", "generic", "creds", "--from-literal=password="+secretPlaintext)
	if out := c.mustKubectl(t, "", "get", "secret", "creds", "-o", "jsonpath={.data.password}"); out != base64.StdEncoding.EncodeToString([]byte(secretPlaintext)) {
		t.Fatalf("kubectl get secret: password %q", out)
	}
	client, err := clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	resp, err := client.Get(context.Background(), "/registry/core/secrets/default/creds")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd get: %v %v", err, resp)
	}
	v := resp.Kvs[0].Value
	assertNoPlaintext(t, "etcd", v)
	if !bytes.HasPrefix(v, []byte("k8s:enc:secretbox:v1:box1:")) {
		t.Fatalf("etcd value starts %q, want k8s:enc:secretbox:v1:box1:", v[:min(len(v), 30)])
	}
}

// A missing, malformed or invalid configuration stops miniapi at start with a message
// naming the flag and the problem.
func TestEncryptionConfigErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for path, want := range map[string]string{
		filepath.Join(dir, "absent.yaml"): "no such file",
		write("garbage.yaml", "{{{"):      "error while parsing file",
		write("shortkey.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n      - name: k\n        secret: "+base64.StdEncoding.EncodeToString([]byte("short"))+"\n"): "secret is not of the expected length",
		write("nokeys.yaml", "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aesgcm:\n      keys: []\n"):                                                                                         "keys: Required value",
	} {
		o := Options{DataDir: t.TempDir(), BindAddress: "127.0.0.1", SecurePort: freeport.For(t), Store: "bolt", ServiceRange: "10.96.0.0/12",
			EncryptionProviderConfig: path, Log: slog.New(slog.DiscardHandler)}
		err := Run(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), "--encryption-provider-config") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one naming the flag and %q", filepath.Base(path), err, want)
		}
	}
}
