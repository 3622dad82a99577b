package runtime

import "testing"

func TestPlainHTTPRegistries(t *testing.T) {
	plain := plainHTTP([]string{"registry.lab:5000", "10.200.0.2:5000"})
	for host, want := range map[string]bool{
		"registry.lab:5000": true, "10.200.0.2:5000": true, "localhost:5000": true, "127.0.0.1:5000": true,
		"registry.lab": false, "docker.io": false, "10.200.0.2:5001": false,
	} {
		if got, err := plain(host); err != nil || got != want {
			t.Errorf("plainHTTP(%s) = %v, %v; want %v", host, got, err, want)
		}
	}
}
