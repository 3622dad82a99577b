package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMounttestLines: mounttest prints the lines the volume tests match, in their words,
// and exits 1 when a path it was asked about is missing.
func TestMounttestLines(t *testing.T) {
	bin, dir := buildAgnhost(t), t.TempDir()
	file := filepath.Join(dir, "f")
	out, err := exec.Command(bin, "mounttest", "--new_file_0644="+file, "--file_mode="+file, "--file_perm="+file, "--file_content="+file).CombinedOutput()
	if err != nil {
		t.Fatalf("mounttest: %v\n%s", err, out)
	}
	want := `content of file "` + file + `": mount-tester new file
` + "\n" + `mode of file "` + file + `": -rw-r--r--
perms of file "` + file + `": -rw-r--r--
content of file "` + file + `": mount-tester new file
` + "\n"
	if string(out) != want {
		t.Errorf("mounttest printed\n%q\nwant\n%q", out, want)
	}
	out, err = exec.Command(bin, "mounttest", "--file_mode="+filepath.Join(dir, "missing")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "error from Stat(") {
		t.Errorf("a missing path: err %v, output %s", err, out)
	}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		out, _ := exec.Command(bin, "mounttest", "--fs_type=/dev/shm").CombinedOutput()
		if string(out) != "mount type of \"/dev/shm\": tmpfs\n" {
			t.Errorf("fs_type of /dev/shm: %q", out)
		}
	}
}
