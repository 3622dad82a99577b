package agent

import (
	"strings"
	"testing"
)

// TestConfigValidateNodeAPIFlags: the node API takes its certificate from files or from
// CSRs (--rotate-server-certificates), never both, and always needs the client CA.
func TestConfigValidateNodeAPIFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" accepted
	}{
		{"files", Config{TLSCertFile: "c", TLSPrivateKeyFile: "k", ClientCAFile: "ca"}, ""},
		{"files without key", Config{TLSCertFile: "c", ClientCAFile: "ca"}, "needs all of --tls-cert-file"},
		{"rotating", Config{RotateServerCertificates: true, ClientCAFile: "ca"}, ""},
		{"rotating and files", Config{RotateServerCertificates: true, TLSCertFile: "c", TLSPrivateKeyFile: "k", ClientCAFile: "ca"}, "drop --tls-cert-file"},
		{"rotating without client CA", Config{RotateServerCertificates: true}, "needs --client-ca-file"},
	} {
		err := tc.cfg.Validate()
		nodeAPIErr := err != nil && (strings.Contains(err.Error(), "--tls-cert-file") || strings.Contains(err.Error(), "--client-ca-file"))
		switch {
		case tc.want == "" && nodeAPIErr:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	if !(Config{RotateServerCertificates: true}).ServesNodeAPI() || (Config{}).ServesNodeAPI() {
		t.Error("servesNodeAPI")
	}
}
