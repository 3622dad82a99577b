package addons

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/minik8s/minik8s/images"
)

// TestCoreDNSManifestFitsTogether: the manifest's pieces name each other and the
// constants minilet and the installers use.
func TestCoreDNSManifestFitsTogether(t *testing.T) {
	objs := decodeAll(t, CoreDNS)
	var (
		svc     *corev1.Service
		cm      *corev1.ConfigMap
		deploy  *appsv1.Deployment
		binding *rbacv1.ClusterRoleBinding
	)
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Service:
			svc = o
		case *corev1.ConfigMap:
			cm = o
		case *appsv1.Deployment:
			deploy = o
		case *rbacv1.ClusterRoleBinding:
			binding = o
		}
	}
	if svc == nil || cm == nil || deploy == nil || binding == nil {
		t.Fatalf("manifest lacks a Service, ConfigMap, Deployment or ClusterRoleBinding: %d objects", len(objs))
	}
	if svc.Spec.ClusterIP != ClusterDNSIP || svc.Name != "kube-dns" {
		t.Errorf("Service %s at %s, want kube-dns at %s", svc.Name, svc.Spec.ClusterIP, ClusterDNSIP)
	}
	corefile := cm.Data["Corefile"]
	if !strings.Contains(corefile, "kubernetes "+ClusterDomain+" ") || !strings.Contains(corefile, "forward . /etc/resolv.conf") || !strings.Contains(corefile, "\n    loop\n") {
		t.Errorf("Corefile must serve %s, forward the rest to the node's resolvers and stop on a loop:\n%s", ClusterDomain, corefile)
	}
	// kubeadm's Corefile caches the answers of the cluster's own zone in no way: a Service
	// created or deleted resolves (or fails, NXDOMAIN) as soon as CoreDNS sees it, not 30 s
	// later once a cached answer expires.
	if !strings.Contains(corefile, "cache 30 {\n        disable success "+ClusterDomain+"\n        disable denial "+ClusterDomain+"\n    }") {
		t.Errorf("Corefile must not cache %s's answers (kubeadm's cache block):\n%s", ClusterDomain, corefile)
	}
	pod := deploy.Spec.Template.Spec
	if pod.DNSPolicy != corev1.DNSDefault {
		t.Errorf("CoreDNS's dnsPolicy %q, want Default: it forwards to the node's resolvers, not to itself", pod.DNSPolicy)
	}
	if pod.Containers[0].Image != images.CoreDNSRef {
		t.Errorf("image %s, want %s", pod.Containers[0].Image, images.CoreDNSRef)
	}
	secret := ""
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			secret = v.Secret.SecretName
		}
	}
	if secret != CoreDNSSecret {
		t.Errorf("kubeconfig volume from Secret %q, want %q", secret, CoreDNSSecret)
	}
	s := binding.Subjects[0]
	if user := "system:serviceaccount:" + s.Namespace + ":" + s.Name; s.Kind != rbacv1.ServiceAccountKind || user != CoreDNSUser {
		t.Errorf("binding subject %+v is not the user %s", s, CoreDNSUser)
	}
	if !strings.Contains(corefile, "kubeconfig /etc/coredns-kubeconfig/kubeconfig") {
		t.Errorf("Corefile does not use the mounted kubeconfig:\n%s", corefile)
	}
}

// TestCoreDNSIsHighlyAvailable: as kubeadm deploys it, two replicas that prefer different
// nodes (kubernetes.io/hostname), critical priority, one unavailable at a time in a
// rollout, and a PodDisruptionBudget of the same pods allowing one down.
func TestCoreDNSIsHighlyAvailable(t *testing.T) {
	var (
		deploy *appsv1.Deployment
		pdb    *policyv1.PodDisruptionBudget
	)
	for _, o := range decodeAll(t, CoreDNS) {
		switch o := o.(type) {
		case *appsv1.Deployment:
			deploy = o
		case *policyv1.PodDisruptionBudget:
			pdb = o
		}
	}
	if deploy == nil || pdb == nil {
		t.Fatalf("manifest lacks the Deployment (%v) or the PodDisruptionBudget (%v)", deploy != nil, pdb != nil)
	}
	if r := deploy.Spec.Replicas; r == nil || *r != 2 {
		t.Errorf("replicas %v, want 2", r)
	}
	if ru := deploy.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 1 {
		t.Errorf("rolling update %+v, want maxUnavailable 1", ru)
	}
	pod := deploy.Spec.Template
	if pod.Spec.PriorityClassName != "system-cluster-critical" {
		t.Errorf("priorityClassName %q", pod.Spec.PriorityClassName)
	}
	podLabels := labels.Set(pod.Labels)
	spread := false
	if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, term := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			sel, err := metav1.LabelSelectorAsSelector(term.PodAffinityTerm.LabelSelector)
			spread = spread || (err == nil && term.PodAffinityTerm.TopologyKey == corev1.LabelHostname && sel.Matches(podLabels))
		}
		if len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			t.Errorf("a required anti-affinity would leave the second replica Pending on a one-node cluster")
		}
	}
	if !spread {
		t.Errorf("no preferred pod anti-affinity on %s selecting CoreDNS's own pods: %+v", corev1.LabelHostname, pod.Spec.Affinity)
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || !sel.Matches(podLabels) || pdb.Namespace != deploy.Namespace {
		t.Errorf("PodDisruptionBudget %s/%s selects %v, not CoreDNS's pods (%v)", pdb.Namespace, pdb.Name, pdb.Spec.Selector, err)
	}
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget maxUnavailable %v, want 1", pdb.Spec.MaxUnavailable)
	}
}

func decodeAll(t *testing.T, manifest []byte) []runtime.Object {
	t.Helper()
	var objs []runtime.Object
	r := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("decoding %s: %v", doc, err)
		}
		objs = append(objs, obj)
	}
}

// TestStorageClassManifest: the default class is marked default, names the provisioner
// miniapi runs and takes the installer's directory.
func TestStorageClassManifest(t *testing.T) {
	objs := decodeAll(t, StorageClass("/var/lib/x/storage"))
	if len(objs) != 1 {
		t.Fatalf("want one StorageClass, got %d objects", len(objs))
	}
	sc, ok := objs[0].(*storagev1.StorageClass)
	if !ok {
		t.Fatalf("want a StorageClass, got %T", objs[0])
	}
	if sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" || sc.Provisioner != "minik8s.io/local-path" ||
		sc.Parameters["path"] != "/var/lib/x/storage" || sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		t.Fatalf("unexpected class: %+v", sc)
	}
}
