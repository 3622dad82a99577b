package vmtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/internal/testenv"
	"github.com/vishvananda/netlink"
)

func TestModulesComeAfterTheirDependencies(t *testing.T) {
	k, err := FindKernel()
	if err != nil {
		testenv.Missing(t, "kernel for the VM: %v", err)
	}
	mods, err := k.Modules("ip_vs_rr", "dummy")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range mods {
		names = append(names, strings.TrimSuffix(filepath.Base(m), ".ko"))
	}
	pos := map[string]int{}
	for i, n := range names {
		pos[n] = i
	}
	for _, before := range [][2]string{{"nf_conntrack", "ip_vs"}, {"libcrc32c", "nf_conntrack"}, {"ip_vs", "ip_vs_rr"}} {
		a, okA := pos[before[0]]
		b, okB := pos[before[1]]
		if !okA || !okB || a > b {
			t.Errorf("%s must load before %s: %v", before[0], before[1], names)
		}
	}
	if names[len(names)-1] != "dummy" {
		t.Errorf("order %v", names)
	}
	if _, err := k.Modules("no_such_module"); err == nil {
		t.Error("an unknown module was accepted")
	}
}

func TestInitramfsIsNewcCpio(t *testing.T) {
	r := NewInitramfs()
	r.Bytes("/etc/hello", []byte("hi"), 0o644)
	r.Symlink("/bin/sh", "busybox")
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, name := range []string{"bin\x00", "bin/sh\x00", "etc\x00", "etc/hello\x00", "TRAILER!!!\x00"} {
		if !strings.Contains(out, name) {
			t.Errorf("archive lacks %q", name)
		}
	}
	if strings.Index(out, "etc\x00") > strings.Index(out, "etc/hello\x00") {
		t.Error("a directory comes after its content")
	}
	if buf.Len()%4 != 0 || !strings.HasPrefix(out, "070701") {
		t.Errorf("not newc: %d bytes, starts %q", buf.Len(), out[:6])
	}
}

// TestBootDebianKernel boots the kernel with the dummy module and, inside, makes a dummy
// link (this host's kernel cannot).
func TestBootDebianKernel(t *testing.T) {
	if !InVM() {
		RunTest(t, Options{Modules: []string{"dummy"}, Timeout: 2 * 60e9})
		return
	}
	version, err := os.ReadFile("/proc/version")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inside: %s", version)
	if err := netlink.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: "probe0"}}); err != nil {
		t.Fatalf("dummy link: %v", err)
	}
	if _, err := netlink.LinkByName("probe0"); err != nil {
		t.Fatal(err)
	}
}

func TestWireEndsFaceEachOther(t *testing.T) {
	a, b := Wire("/tmp/w", "52:54:00:00:00:01", "52:54:00:00:00:02")
	if a.Local != b.Remote || b.Local != a.Remote || a.Local == b.Local {
		t.Errorf("ends %+v and %+v do not face each other", a, b)
	}
	if a.MAC == b.MAC || a.MAC != "52:54:00:00:00:01" {
		t.Errorf("MACs %q, %q", a.MAC, b.MAC)
	}
}
