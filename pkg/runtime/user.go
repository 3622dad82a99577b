package runtime

// minilet applies an image's config and resolves a container's user itself rather than with
// containerd's oci.WithImageConfig, WithUser, WithUserID and WithAdditionalGIDs: those read
// the image's /etc/passwd through containerd's internal/fsview, which executes text/template,
// and one reachable template execution turns off the Go linker's dead-method elimination
// (every exported method of every type in an interface is kept): minilet's binary was
// 70.7 MB instead of ~42 and its RSS at 0 pods ~14 MiB higher (docs/performance.md,
// "minilet: memory at 0 pods"). The rules below are those of containerd's CRI plugin.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/moby/sys/user"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// withImageProcess gives the process the image's environment (PATH alone when it has none),
// Entrypoint and Cmd, and working directory ("/" when it has none), as oci.WithImageConfig.
func withImageProcess(config ocispec.ImageConfig) oci.SpecOpts {
	return func(ctx context.Context, client oci.Client, c *containers.Container, s *specs.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		if len(config.Env) > 0 {
			s.Process.Env = append([]string(nil), config.Env...)
		} else if err := oci.WithDefaultPathEnv(ctx, client, c, s); err != nil {
			return err
		}
		s.Process.Args = append(append([]string(nil), config.Entrypoint...), config.Cmd...)
		s.Process.Cwd = config.WorkingDir
		if s.Process.Cwd == "" {
			s.Process.Cwd = "/"
		}
		return nil
	}
}

// withUser sets the process's user from userstr, "uid", "name", "uid-or-name:gid-or-group"
// or "" (root), looked up in the image's /etc/passwd and /etc/group as containerd does: a
// name must be there, a uid need not be (its group is then 0). The additional groups are the
// process's group, the groups /etc/group lists the user in, then supplemental.
func withUser(userstr string, supplemental []int64) oci.SpecOpts {
	return func(ctx context.Context, client oci.Client, c *containers.Container, s *specs.Spec) error {
		if c.Snapshotter == "" || c.SnapshotKey == "" {
			return errors.New("resolving the user: the container has no snapshot")
		}
		mounts, err := client.SnapshotService(c.Snapshotter).Mounts(ctx, c.SnapshotKey)
		if err != nil {
			return err
		}
		var u specs.User
		// Read-only, so unmounting does not sync the whole filesystem.
		err = mount.WithReadonlyTempMount(ctx, mounts, func(root string) error {
			r, err := os.OpenRoot(root) // confines the image's symlinks to its root
			if err != nil {
				return err
			}
			defer r.Close()
			u, err = resolveUser(r, userstr)
			return err
		})
		if err != nil {
			return fmt.Errorf("user %q of the image: %w", userstr, err)
		}
		for _, g := range supplemental {
			u.AdditionalGids = append(u.AdditionalGids, uint32(g))
		}
		// Sorted, each once, as containerd's CRI plugin merges them (mergeGids in
		// internal/cri/opts/spec_opts.go); the kubelet reports them in this order.
		slices.Sort(u.AdditionalGids)
		u.AdditionalGids = slices.Compact(u.AdditionalGids)
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		s.Process.User = u
		return nil
	}
}

// resolveUser reads root's etc/passwd and etc/group for userstr (see withUser).
func resolveUser(root *os.Root, userstr string) (specs.User, error) {
	name, group, hasGroup := strings.Cut(userstr, ":")
	if name == "" {
		name = "0"
	}
	users, err := readUserFile(root, "etc/passwd", user.ParsePasswd)
	if err != nil {
		return specs.User{}, err
	}
	groups, err := readUserFile(root, "etc/group", user.ParseGroup)
	if err != nil {
		return specs.User{}, err
	}

	var u specs.User
	var entry *user.User
	if uid, numeric, err := parseID(name); err != nil {
		return specs.User{}, err
	} else if numeric {
		u.UID = uid
		if i := slices.IndexFunc(users, func(x user.User) bool { return x.Uid == int(uid) }); i >= 0 {
			entry = &users[i]
		}
	} else {
		i := slices.IndexFunc(users, func(x user.User) bool { return x.Name == name })
		if i < 0 {
			return specs.User{}, fmt.Errorf("no user %q in /etc/passwd", name)
		}
		entry = &users[i]
		u.UID = uint32(entry.Uid)
	}

	switch gid, numeric, err := parseID(group); {
	case !hasGroup && entry != nil && userstr != "":
		u.GID = uint32(entry.Gid)
	case !hasGroup:
		// no entry for the uid, or no user at all: group 0
	case err != nil:
		return specs.User{}, err
	case numeric:
		u.GID = gid
	default:
		i := slices.IndexFunc(groups, func(g user.Group) bool { return g.Name == group })
		if i < 0 {
			return specs.User{}, fmt.Errorf("no group %q in /etc/group", group)
		}
		u.GID = uint32(groups[i].Gid)
	}

	u.AdditionalGids = []uint32{u.GID}
	if entry != nil {
		for _, g := range groups {
			if g.Name != entry.Name && slices.Contains(g.List, entry.Name) && !slices.Contains(u.AdditionalGids, uint32(g.Gid)) {
				u.AdditionalGids = append(u.AdditionalGids, uint32(g.Gid))
			}
		}
	}
	return u, nil
}

// parseID parses a uid or gid; numeric is false for a name. runc takes at most MaxInt32.
func parseID(s string) (id uint32, numeric bool, err error) {
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange) || err == nil && (n < 0 || n > math.MaxInt32):
		return 0, true, fmt.Errorf("id %s out of range", s)
	case err != nil:
		return 0, false, nil
	}
	return uint32(n), true, nil
}

// readUserFile parses root's etc/passwd or etc/group; an image without one has no entries.
func readUserFile[T any](root *os.Root, name string, parse func(r io.Reader) ([]T, error)) ([]T, error) {
	f, err := root.Open(name)
	if err != nil {
		// os.Root refuses absolute symlinks; one inside the image is followed from its root,
		// as containerd does.
		if target, lerr := root.Readlink(name); lerr == nil && path.IsAbs(target) {
			f, err = root.Open(strings.TrimPrefix(path.Clean(target), "/"))
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := parse(f)
	if err != nil {
		return nil, fmt.Errorf("/%s: %w", name, err)
	}
	return entries, nil
}

// recordUser records the process's user, as withUser resolved it, in labels (LabelUser):
// the spec is built before the container's labels are stored.
func recordUser(labels map[string]string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
		if s.Process == nil {
			return nil
		}
		u := s.Process.User
		gids := make([]string, len(u.AdditionalGids))
		for i, g := range u.AdditionalGids {
			gids[i] = strconv.FormatUint(uint64(g), 10)
		}
		labels[LabelUser] = fmt.Sprintf("%d:%d:%s", u.UID, u.GID, strings.Join(gids, ","))
		return nil
	}
}

// ParseUser reads a container's User (LabelUser); nil when it is missing or malformed.
func ParseUser(label string) *User {
	f := strings.Split(label, ":")
	if len(f) != 3 {
		return nil
	}
	uid, err1 := strconv.ParseInt(f[0], 10, 64)
	gid, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return nil
	}
	u := &User{UID: uid, GID: gid}
	for g := range strings.SplitSeq(f[2], ",") {
		if n, err := strconv.ParseInt(g, 10, 64); err == nil {
			u.SupplementalGroups = append(u.SupplementalGroups, n)
		}
	}
	return u
}
