// Package vmtest boots a real Linux kernel in qemu for tests that need kernel features this
// host lacks (IPVS, dummy links, a systemd as PID 1): Debian's linux-image package,
// unpacked (not installed) by hack/install-deps.sh into a cache directory, with an
// initramfs the test builds (busybox, the kernel modules it needs with their dependencies,
// its own binaries and their shared libraries). The VM has no network device; its serial
// console comes back to the test, and every run is bounded by a timeout.
//
// Two ways to use it:
//   - RunTest re-runs the calling test inside the VM (the same test binary, with
//     InVM() true there) and fails the outer test unless the inner one passes;
//   - Kernel, Initramfs and VM are the parts, for a test bringing its own root (a disk
//     image with systemd, say): build what it needs and call VM.Run with the kernel command
//     line and extra qemu arguments it wants.
package vmtest

import (
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DefaultKernelDir is where hack/install-deps.sh unpacks Debian's linux-image package
// (`apt-get download` + `dpkg-deb -x`: the host's own kernel is not touched).
const DefaultKernelDir = "/var/cache/minik8s/vmkernel/root"

// KernelDirEnv overrides DefaultKernelDir.
const KernelDirEnv = "MINIK8S_VM_KERNEL"

// Kernel is an unpacked linux-image package: the image and its modules.
type Kernel struct {
	Root    string // the unpacked package: boot/ and lib/modules/<Version>/
	Version string // e.g. "6.1.0-56-amd64"
	Image   string // boot/vmlinuz-<Version>

	modules map[string]string // module name (dashes as underscores) -> .ko path
}

// FindKernel opens the unpacked kernel package in $MINIK8S_VM_KERNEL or DefaultKernelDir.
func FindKernel() (*Kernel, error) {
	root := os.Getenv(KernelDirEnv)
	if root == "" {
		root = DefaultKernelDir
	}
	return OpenKernel(root)
}

// OpenKernel opens a linux-image package unpacked at root. With several versions there,
// the last in name order is taken.
func OpenKernel(root string) (*Kernel, error) {
	images, err := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	if err != nil || len(images) == 0 {
		return nil, fmt.Errorf("no boot/vmlinuz-* under %s (hack/install-deps.sh unpacks Debian's linux-image-amd64 there): %v", root, err)
	}
	image := images[len(images)-1]
	version := strings.TrimPrefix(filepath.Base(image), "vmlinuz-")
	k := &Kernel{Root: root, Version: version, Image: image, modules: map[string]string{}}
	dir := filepath.Join(root, "lib", "modules", version)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".ko") {
			k.modules[moduleName(strings.TrimSuffix(d.Name(), ".ko"))] = path
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("modules of %s: %w", version, err)
	}
	if len(k.modules) == 0 {
		return nil, fmt.Errorf("no uncompressed modules (*.ko) under %s", dir)
	}
	return k, nil
}

func moduleName(s string) string { return strings.ReplaceAll(s, "-", "_") }

// Modules lists the module files to load, in order, for the named modules: each one's
// dependencies (the "depends" of its .modinfo, and the "softdep pre:" ones that name a
// module) come before it, each file once. A name built into the kernel is an error here;
// list only modules (CONFIG_...=m).
func (k *Kernel) Modules(names ...string) ([]string, error) {
	var order []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name string, optional bool) error
	visit = func(name string, optional bool) error {
		name = moduleName(name)
		switch state[name] {
		case 1:
			return fmt.Errorf("module dependency cycle at %s", name)
		case 2:
			return nil
		}
		path, ok := k.modules[name]
		if !ok {
			if optional {
				return nil
			}
			return fmt.Errorf("module %s: not in %s's modules (built in, or misspelt?)", name, k.Version)
		}
		state[name] = 1
		deps, pre, err := modinfo(path)
		if err != nil {
			return err
		}
		for _, d := range pre {
			if err := visit(d, true); err != nil {
				return err
			}
		}
		for _, d := range deps {
			if err := visit(d, false); err != nil {
				return fmt.Errorf("%s needs %w", name, err)
			}
		}
		state[name] = 2
		order = append(order, path)
		return nil
	}
	for _, n := range names {
		if err := visit(n, false); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// modinfo reads a module's dependencies from its .modinfo section: "depends=a,b" and
// "softdep=pre: x y post: z".
func modinfo(path string) (depends, softPre []string, err error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("module %s: %w", path, err)
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, nil, errors.New("module " + path + ": no .modinfo section")
	}
	data, err := sec.Data()
	if err != nil {
		return nil, nil, fmt.Errorf("module %s: %w", path, err)
	}
	for _, kv := range strings.Split(string(data), "\x00") {
		switch {
		case strings.HasPrefix(kv, "depends="):
			for _, d := range strings.Split(strings.TrimPrefix(kv, "depends="), ",") {
				if d != "" {
					depends = append(depends, d)
				}
			}
		case strings.HasPrefix(kv, "softdep="):
			pre := false
			for _, w := range strings.Fields(strings.TrimPrefix(kv, "softdep=")) {
				switch w {
				case "pre:":
					pre = true
				case "post:":
					pre = false
				default:
					if pre {
						softPre = append(softPre, w)
					}
				}
			}
		}
	}
	return depends, softPre, nil
}
