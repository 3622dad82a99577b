package pki

import (
	"errors"
	"path/filepath"
)

// An etcd cluster's certificates, all from the cluster CA, in one directory: each member's
// peer certificate (NAME.crt, NAME.key), the API servers' client certificate and the CA's
// certificate. minilab's HA lab and `miniapi etcd-certs` (the systemd etcd unit) write them.
const (
	EtcdClientCertFile = "apiserver-etcd-client.crt"
	EtcdClientKeyFile  = "apiserver-etcd-client.key"
)

// EtcdClientFiles are the CA, certificate and key in dir that a client of etcd presents
// (miniapi's --etcd-cafile, --etcd-certfile, --etcd-keyfile; etcdctl's --cacert, --cert, --key).
func EtcdClientFiles(dir string) (caFile, certFile, keyFile string) {
	return filepath.Join(dir, CACertFile), filepath.Join(dir, EtcdClientCertFile), filepath.Join(dir, EtcdClientKeyFile)
}

// EtcdMemberFiles are member name's certificate and key in dir (etcd's --cert-file and
// --peer-cert-file, --key-file and --peer-key-file).
func EtcdMemberFiles(dir, name string) (certFile, keyFile string) {
	return filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
}

// WriteEtcdMember writes member name's peer certificate into dir: it serves hosts and the
// loopback address (a local client, as a stacked API server) and is a client of the other
// members. The CA's certificate goes beside it.
func (ca *CA) WriteEtcdMember(dir, name string, hosts []string) error {
	if name == "" {
		return errors.New("etcd member certificate needs the member's name")
	}
	pair, err := ca.IssuePeer(name, append(append([]string(nil), hosts...), name, "127.0.0.1", "localhost"))
	if err != nil {
		return err
	}
	cert, key := EtcdMemberFiles(dir, name)
	if err := pair.WriteFiles(cert, key); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, CACertFile), ca.CertPEM, 0o644)
}

// WriteEtcdClient writes the API servers' client certificate for etcd and the CA's
// certificate into dir (EtcdClientFiles).
func (ca *CA) WriteEtcdClient(dir string) error {
	pair, err := ca.IssueClient("kube-apiserver-etcd-client", nil)
	if err != nil {
		return err
	}
	caFile, cert, key := EtcdClientFiles(dir)
	if err := pair.WriteFiles(cert, key); err != nil {
		return err
	}
	return writeFile(caFile, ca.CertPEM, 0o644)
}
