package network

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestReleaseOrphanedIPs(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, NetworkName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"10.244.1.2": "live-sandbox\r\neth0", "10.244.1.3": "gone-sandbox\r\neth0", "10.244.1.4": "gone-too",
		"last_reserved_ip.0": "10.244.1.4", "lock": "",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	freed, err := ReleaseOrphanedIPs(data, func() (map[string]bool, error) { return map[string]bool{"live-sandbox": true}, nil })
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(freed)
	if !slices.Equal(freed, []string{"10.244.1.3", "10.244.1.4"}) {
		t.Errorf("freed %v", freed)
	}
	left, _ := os.ReadDir(dir)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"10.244.1.2", "last_reserved_ip.0", "lock"}) {
		t.Errorf("left %v", names)
	}
	if freed, err := ReleaseOrphanedIPs(filepath.Join(data, "none"), nil); err != nil || freed != nil {
		t.Errorf("on a node that never wired a pod: %v, %v", freed, err)
	}
}
