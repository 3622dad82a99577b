package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/minik8s/minik8s/pkg/control/auth/serviceaccount"
	"github.com/minik8s/minik8s/pkg/control/controlplane"
	"github.com/minik8s/minik8s/pkg/lab"
	"github.com/minik8s/minik8s/pkg/lab/forward"
	"github.com/minik8s/minik8s/pkg/pki"
)

// A highly available lab (Options.ControlPlanes > 1) runs, on each control-plane member
// cp-i, an etcd member and a miniapi on the etcd cluster of all members, its controllers
// and scheduler elected by Lease; the lab's control-plane namespace then holds the API
// balancer (minilab apilb), whose address, the control-plane address, every kubeconfig
// of the lab names: kind's HA shape, its haproxy container in front of the control planes.

// Ports of a member's etcd.
const (
	EtcdClientPort = 2379
	EtcdPeerPort   = 2380
)

// APIBalancerProcess is the lab process of the API balancer.
const APIBalancerProcess = "apilb"

// EtcdProcess and MiniapiProcess name member m's processes in lab.json.
func EtcdProcess(m lab.Member) string    { return "etcd-" + m.Name }
func MiniapiProcess(m lab.Member) string { return "miniapi-" + m.Name }

// EtcdPKIDir holds the etcd members' peer certificates and the API servers' client
// certificate for etcd, all from the cluster CA.
func EtcdPKIDir(l *lab.Lab) string { return filepath.Join(l.StateDir, "etcd-pki") }

// EtcdClientFiles are the CA, certificate and key a client of the lab's etcd presents
// (miniapi's --etcd-cafile, --etcd-certfile, --etcd-keyfile; etcdctl's --cacert, --cert,
// --key).
func EtcdClientFiles(l *lab.Lab) (ca, cert, key string) { return pki.EtcdClientFiles(EtcdPKIDir(l)) }

// EtcdEndpoints are the members' client URLs.
func EtcdEndpoints(l *lab.Lab) []string {
	var out []string
	for _, m := range l.ControlPlanes {
		out = append(out, fmt.Sprintf("https://%s:%d", m.IP, EtcdClientPort))
	}
	return out
}

func memberDataDir(l *lab.Lab, m lab.Member) string {
	return filepath.Join(l.StateDir, MiniapiProcess(m))
}

// startControlPlanes brings up the etcd cluster, a miniapi on each member and the
// balancer in front of them, and writes the admin kubeconfig for the balancer's address.
func startControlPlanes(ctx context.Context, l *lab.Lab, o Options, ca *pki.CA) error {
	if err := writeEtcdPKI(l, ca); err != nil {
		return err
	}
	var peers []string
	for _, m := range l.ControlPlanes {
		peers = append(peers, fmt.Sprintf("%s=https://%s:%d", m.Name, m.IP, EtcdPeerPort))
	}
	caFile := filepath.Join(EtcdPKIDir(l), pki.CACertFile)
	for _, m := range l.ControlPlanes {
		step(o.Progress, "starting etcd member %s in %s (https://%s:%d)", m.Name, m.NetNS, m.IP, EtcdClientPort)
		cert, key := pki.EtcdMemberFiles(EtcdPKIDir(l), m.Name)
		client := fmt.Sprintf("https://%s:%d", m.IP, EtcdClientPort)
		peer := fmt.Sprintf("https://%s:%d", m.IP, EtcdPeerPort)
		// Started again on its data dir (minilab restart), a member ignores the
		// --initial-cluster flags and rejoins with what it stored.
		if _, err := l.Start(lab.Process{Name: EtcdProcess(m), NetNS: m.NetNS, Args: []string{
			filepath.Join(o.BinDir, "etcd"), "--name", m.Name, "--data-dir", filepath.Join(l.StateDir, EtcdProcess(m)),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(peers, ","), "--initial-cluster-state", "new", "--initial-cluster-token", l.Name,
			"--client-cert-auth", "--trusted-ca-file", caFile, "--cert-file", cert, "--key-file", key,
			"--peer-client-cert-auth", "--peer-trusted-ca-file", caFile, "--peer-cert-file", cert, "--peer-key-file", key,
			"--logger", "zap", "--log-outputs", "stderr",
		}}); err != nil {
			return err
		}
	}
	if err := waitEtcdHealthy(ctx, l, ca); err != nil {
		return err
	}

	shared := controlplane.PKIDir(apiDataDir(l))
	saKey := filepath.Join(shared, "sa.key")
	if _, err := serviceaccount.EnsureSigningKey(saKey); err != nil {
		return err
	}
	etcdCA, etcdCert, etcdKey := EtcdClientFiles(l)
	var hostPorts, backends []string
	for _, m := range l.ControlPlanes {
		hostPorts = append(hostPorts, fmt.Sprintf("%s:%d", m.IP, EtcdClientPort))
		backends = append(backends, net.JoinHostPort(m.IP, fmt.Sprint(APIPort)))
	}
	for _, m := range l.ControlPlanes {
		step(o.Progress, "starting miniapi on %s (https://%s:%d, identity %s_...)", m.Name, m.IP, APIPort, m.Name)
		dataDir := memberDataDir(l, m)
		// One CA and one token signing key for the whole control plane: each server
		// trusts what another issued.
		if err := copyFiles(shared, controlplane.PKIDir(dataDir), pki.CACertFile, pki.CAKeyFile); err != nil {
			return err
		}
		args := append(miniapiArgs(l, o, dataDir, m.IP),
			"--store", "etcd://"+strings.Join(hostPorts, ","),
			"--etcd-cafile", etcdCA, "--etcd-certfile", etcdCert, "--etcd-keyfile", etcdKey,
			"--leader-elect", "--hostname-override", m.Name,
			"--tls-san", lab.ControlPlaneIP, "--service-account-signing-key-file", saKey)
		if _, err := l.Start(lab.Process{Name: MiniapiProcess(m), NetNS: m.NetNS, Args: args}); err != nil {
			return err
		}
	}
	step(o.Progress, "starting the API balancer in %s (%s -> %s)", l.ControlPlane.NetNS, serverURL(), strings.Join(backends, ", "))
	lbArgs := []string{filepath.Join(o.BinDir, "minilab"), "apilb", "--listen", net.JoinHostPort(lab.ControlPlaneIP, fmt.Sprint(APIPort)),
		"--ca-file", filepath.Join(shared, pki.CACertFile)}
	for _, b := range backends {
		lbArgs = append(lbArgs, "--backend", b)
	}
	if _, err := l.Start(lab.Process{Name: APIBalancerProcess, NetNS: l.ControlPlane.NetNS, Args: lbArgs}); err != nil {
		return err
	}
	return ca.WriteKubeconfig(l.Kubeconfig, serverURL(), "admin", []string{"system:masters"})
}

// writeEtcdPKI issues each member's peer certificate and the API servers' etcd client
// certificate (the code `miniapi etcd-certs` runs on hosts).
func writeEtcdPKI(l *lab.Lab, ca *pki.CA) error {
	dir := EtcdPKIDir(l)
	for _, m := range l.ControlPlanes {
		if err := ca.WriteEtcdMember(dir, m.Name, []string{m.IP}); err != nil {
			return err
		}
	}
	return ca.WriteEtcdClient(dir)
}

// waitEtcdHealthy waits until every member answers /health with its cluster's quorum,
// asked from inside the lab as a client of the cluster.
func waitEtcdHealthy(ctx context.Context, l *lab.Lab, ca *pki.CA) error {
	_, cert, key := EtcdClientFiles(l)
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return err
	}
	nsPath := lab.NetNSPath(l.ControlPlane.NetNS)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ca.CertPool(), Certificates: []tls.Certificate{pair}},
		DialContext: func(ctx context.Context, proto, addr string) (net.Conn, error) {
			return forward.DialInNetNS(ctx, nsPath, proto, addr)
		},
	}}
	for _, endpoint := range EtcdEndpoints(l) {
		if err := waitFor(ctx, "etcd at "+endpoint, func() bool {
			resp, err := client.Get(endpoint + "/health")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}); err != nil {
			return err
		}
	}
	return nil
}

func copyFiles(from, to string, names ...string) error {
	if err := os.MkdirAll(to, 0o700); err != nil {
		return err
	}
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(from, name))
		if err == nil {
			err = os.WriteFile(filepath.Join(to, name), data, 0o600)
		}
		if err != nil {
			return fmt.Errorf("copy %s to %s: %w", name, to, err)
		}
	}
	return nil
}
