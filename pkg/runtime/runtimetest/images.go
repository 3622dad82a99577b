package runtimetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/minik8s/minik8s/images"
)

// ImagesEnv names a directory holding the image tarballs already built (`make test`
// sets it), which spares each test package a build.
const ImagesEnv = "MINIK8S_IMAGES"

// ImageDir returns a directory holding the project's image tarballs, named as in
// images.Tarballs: $MINIK8S_IMAGES when it holds them all, else a fresh build in the
// test's temporary directory.
func ImageDir(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(ImagesEnv); dir != "" {
		if hasAll(dir) {
			return dir
		}
		t.Logf("%s=%s lacks some image tarballs; building them", ImagesEnv, dir)
	}
	dir := t.TempDir()
	if err := images.Build(context.Background(), images.Options{OutDir: dir}); err != nil {
		t.Fatalf("building images: %v", err)
	}
	return dir
}

func hasAll(dir string) bool {
	for _, name := range images.Tarballs {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}
