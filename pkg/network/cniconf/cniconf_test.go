package cniconf

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
)

func TestGenerate(t *testing.T) {
	raw, err := Generate(Params{BridgeName: "cni0", PodCIDR: "10.244.3.0/24", IPAMDataDir: "/x/networks", MTU: 1450})
	if err != nil {
		t.Fatal(err)
	}
	list, err := libcni.ConfListFromBytes(raw)
	if err != nil {
		t.Fatalf("libcni rejects the generated conflist: %v\n%s", err, raw)
	}
	if list.CNIVersion != Version || list.Name != NetworkName {
		t.Errorf("cniVersion %q name %q", list.CNIVersion, list.Name)
	}
	if got := strings.Join(PluginTypes(list), ","); got != "bridge,host-local,portmap,bandwidth,loopback" {
		t.Errorf("plugins %s", got)
	}
	for _, want := range []string{`"isGateway": true`, `"hairpinMode": true`, `"mtu": 1450`, `"subnet": "10.244.3.0/24"`,
		`"dst": "0.0.0.0/0"`, `"portMappings": true`, `"bandwidth": true`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("conflist lacks %s:\n%s", want, raw)
		}
	}
	if strings.Contains(string(raw), "ipMasq") {
		t.Errorf("conflist asks the bridge plugin to masquerade:\n%s", raw)
	}
	for _, bad := range []Params{
		{BridgeName: "", PodCIDR: "10.244.3.0/24", IPAMDataDir: "/x"},
		{BridgeName: "cni0", PodCIDR: "10.244.3.0/33", IPAMDataDir: "/x"},
		{BridgeName: "cni0", PodCIDR: "10.244.3.0/31", IPAMDataDir: "/x"},
		{BridgeName: "cni0", PodCIDR: "10.244.3.0/24"},
		{BridgeName: "cni0", PodCIDR: "10.244.3.0/24", IPAMDataDir: "/x", MTU: -1},
	} {
		if _, err := Generate(bad); err == nil {
			t.Errorf("Generate accepted %+v", bad)
		}
	}
}

func TestFirstFileLoaded(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("20-b.conflist", `{"cniVersion":"1.0.0","name":"b","plugins":[{"type":"bridge"}]}`)
	write("10-a.conf", `{"cniVersion":"0.4.0","name":"a","type":"ptp","ipam":{"type":"host-local"}}`)
	first, err := First(dir)
	if err != nil {
		t.Fatal(err)
	}
	list, err := LoadFile(first.Path)
	if err != nil {
		t.Fatal(err)
	}
	if list.Name != "a" || filepath.Base(first.Path) != "10-a.conf" || strings.Join(PluginTypes(list), ",") != "ptp,host-local" {
		t.Errorf("loaded %s from %s (%v)", list.Name, first.Path, PluginTypes(list))
	}
	write("05-broken.conflist", `{"name":`)
	if first, err = First(dir); err != nil || filepath.Base(first.Path) != "05-broken.conflist" {
		t.Fatalf("first file %+v, %v; want 05-broken.conflist", first, err)
	}
	if _, err := LoadFile(first.Path); err == nil || !strings.Contains(err.Error(), "05-broken.conflist") {
		t.Errorf("broken first file: %v, want an error naming it", err)
	}
	if _, err := First(t.TempDir()); !errors.Is(err, ErrNoConfig) {
		t.Errorf("empty directory: %v, want %v", err, ErrNoConfig)
	}
}

func TestPodBandwidth(t *testing.T) {
	bw, err := PodBandwidth(map[string]string{IngressBandwidthAnnotation: "10M", "other": "x"})
	if err != nil || bw == nil || bw.IngressRate != 10_000_000 || bw.IngressBurst != math.MaxInt32 || bw.EgressRate != 0 {
		t.Errorf("10M ingress: %+v, %v", bw, err)
	}
	if bw, err := PodBandwidth(map[string]string{"app": "x"}); bw != nil || err != nil {
		t.Errorf("no annotations: %+v, %v", bw, err)
	}
	for _, v := range []string{"fast", "10", "2P"} {
		if _, err := PodBandwidth(map[string]string{EgressBandwidthAnnotation: v}); err == nil || !strings.Contains(err.Error(), EgressBandwidthAnnotation) {
			t.Errorf("egress %q: %v, want an error naming the annotation", v, err)
		}
	}
}
