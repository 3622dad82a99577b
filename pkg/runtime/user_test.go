package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/ociimage"
	"github.com/minik8s/minik8s/pkg/runtime"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"k8s.io/utils/ptr"
)

// userImage is an image whose config sets user, with busybox, users and groups of its own
// and an Entrypoint, Cmd, Env and WorkingDir a container inherits.
func userImage(t *testing.T, name, user string) []byte {
	t.Helper()
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatal(err)
	}
	binary, err := os.ReadFile(bb)
	if err != nil {
		t.Fatal(err)
	}
	l := ociimage.NewLayer()
	for _, dir := range []string{"/dev", "/proc", "/sys", "/etc", "/bin", "/work"} {
		l.Dir(dir, 0o755)
	}
	l.File("/bin/busybox", 0o755, binary)
	for _, applet := range []string{"sh", "id", "echo", "pwd"} {
		l.Symlink("/bin/"+applet, "/bin/busybox")
	}
	l.File("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000::/:/bin/sh\nother:x:1001:1001::/:/bin/sh\n"))
	// root and app belong to groups besides their own; app's own group lists app too
	// (containerd leaves it out of the supplementary groups).
	l.File("/etc/group", 0o644, []byte("root:x:0:\nwheel:x:10:root\napp:x:1000:app\nstaff:x:50:app\nextra:x:60:app,other\nother:x:1001:\n"))
	var buf bytes.Buffer
	_, err = ociimage.WriteLayout(&buf, ociimage.Image{Name: name, Layer: l, Config: ocispec.ImageConfig{
		User:       user,
		Entrypoint: []string{"sh", "-c"},
		Cmd:        []string{`echo "user=$(id -u):$(id -g) groups=$(id -G) cwd=$(pwd) env=$FROM_IMAGE,$FROM_POD"`},
		Env:        []string{"PATH=/bin", "FROM_IMAGE=image", "FROM_POD=image"},
		WorkingDir: "/work",
	}})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestContainerUser: a container's user and groups are resolved as containerd's CRI plugin
// does behind the kubelet (the user from runAsUser, else the image's USER without its group,
// else root; the group from runAsGroup, else the user's entry in the image's
// /etc/passwd; supplementary groups from its /etc/group, then the pod's), and the image's
// Entrypoint, Cmd, Env and WorkingDir apply.
func TestContainerUser(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	sandbox, podUID := e.runSandbox(ctx, t, "users")
	ids := []string{sandbox.ID}
	for i, tc := range []struct {
		imageUser string
		security  runtime.Security
		want      string // uid:gid and `id -G`
	}{
		{"", runtime.Security{}, "user=0:0 groups=0 10"},
		{"app", runtime.Security{}, "user=1000:1000 groups=1000 50 60"},
		{"1000", runtime.Security{}, "user=1000:1000 groups=1000 50 60"},
		// The kubelet passes the image's user without its group (getImageUser, from CRI's
		// image status), so the group comes from the image's /etc/passwd, or runAsGroup.
		{"app:staff", runtime.Security{}, "user=1000:1000 groups=1000 50 60"},
		{"1001:60", runtime.Security{}, "user=1001:1001 groups=1001 60"},
		{"1000:1001", runtime.Security{}, "user=1000:1000 groups=1000 50 60"},
		{"app:staff", runtime.Security{RunAsGroup: ptr.To[int64](7)}, "user=1000:7 groups=7 50 60"},
		// runAsGroup alone applies to the image's user, root when it has none.
		{"", runtime.Security{RunAsGroup: ptr.To[int64](7)}, "user=0:7 groups=7 10"},
		{"2000", runtime.Security{}, "user=2000:0 groups=0"},
		{"app", runtime.Security{RunAsUser: ptr.To[int64](1001)}, "user=1001:1001 groups=1001 60"},
		{"", runtime.Security{RunAsUser: ptr.To[int64](2000)}, "user=2000:0 groups=0"},
		{"", runtime.Security{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](7)}, "user=1000:7 groups=7 50 60"},
		{"app", runtime.Security{SupplementalGroups: []int64{3000, 4000}}, "user=1000:1000 groups=1000 50 60 3000 4000"},
		{"app", runtime.Security{SupplementalGroups: []int64{4000, 50, 3000}}, "user=1000:1000 groups=1000 50 60 3000 4000"},
	} {
		ref := "localhost/minik8s/user-test:v" + string(rune('a'+i))
		if _, err := e.rt.ImportImage(ctx, bytes.NewReader(userImage(t, ref, tc.imageUser))); err != nil {
			t.Fatal(err)
		}
		name := "c" + string(rune('a'+i))
		c, err := e.rt.CreateContainer(ctx, runtime.ContainerConfig{
			Name: name, Image: ref, Env: []string{"FROM_POD=pod"}, Security: tc.security,
			SandboxID: sandbox.ID, LogPath: filepath.Join(e.logsDir, podUID, name+".log"),
		})
		if err != nil {
			t.Fatalf("image user %q, %+v: %v", tc.imageUser, tc.security, err)
		}
		ids = append(ids, c.ID)
		// containerd's CRI plugin merges the groups sorted and once each (mergeGids), as
		// the kubelet reports them in status.containerStatuses[].user.
		if u := runtime.ParseUser(c.User); u == nil || !slices.IsSorted(u.SupplementalGroups) || len(slices.Compact(slices.Clone(u.SupplementalGroups))) != len(u.SupplementalGroups) {
			t.Errorf("image user %q, %+v: recorded groups %v, want them sorted, each once", tc.imageUser, tc.security, u)
		}
		if got := userString(runtime.ParseUser(c.User)); got != tc.want {
			t.Errorf("image user %q, %+v: the container's recorded user %s, want what it runs as, %s", tc.imageUser, tc.security, got, tc.want)
		}
		if err := e.rt.StartContainer(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		waitState(t, e, c.ID, runtime.StateExited)
		logs, _ := os.ReadFile(c.LogPath)
		if want := tc.want + " cwd=/work env=image,pod"; !strings.Contains(string(logs), want+"\n") {
			t.Errorf("image user %q, runAsUser %v, runAsGroup %v, supplementalGroups %v: log %q, want %q",
				tc.imageUser, ptr.Deref(tc.security.RunAsUser, -1), ptr.Deref(tc.security.RunAsGroup, -1), tc.security.SupplementalGroups, logs, want)
		}
	}

	// A user name the image does not know is the container's error, as in containerd.
	if _, err := e.rt.ImportImage(ctx, bytes.NewReader(userImage(t, "localhost/minik8s/user-test:unknown", "nosuch"))); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.CreateContainer(ctx, runtime.ContainerConfig{
		Name: "unknown", Image: "localhost/minik8s/user-test:unknown", SandboxID: sandbox.ID,
		LogPath: filepath.Join(e.logsDir, podUID, "unknown.log"),
	}); err == nil {
		t.Error("an image USER missing from its /etc/passwd was accepted")
	}

	for _, id := range ids {
		if err := e.rt.RemoveContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	e.expectNothingLeft(t, ids...)
}

// userString writes a recorded user as the test's images print theirs ("user=UID:GID
// groups=G..."), "none" when the runtime recorded none.
func userString(u *runtime.User) string {
	if u == nil {
		return "none"
	}
	// As `id -G` prints them: the group first, then the others.
	groups := []string{strconv.FormatInt(u.GID, 10)}
	for _, g := range u.SupplementalGroups {
		if g != u.GID {
			groups = append(groups, strconv.FormatInt(g, 10))
		}
	}
	return fmt.Sprintf("user=%d:%d groups=%s", u.UID, u.GID, strings.Join(groups, " "))
}
