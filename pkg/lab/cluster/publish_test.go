package cluster

import (
	"strings"
	"testing"

	"github.com/minik8s/minik8s/pkg/lab"
)

func TestParsePublish(t *testing.T) {
	l := &lab.Lab{Name: "demo", Client: &lab.Member{Name: "client", NetNS: "mk-demo-client"},
		Nodes: []lab.Node{{Name: "node-1", IP: "10.200.0.11"}, {Name: "node-2", IP: "10.200.0.12"}}}
	for spec, want := range map[string]lab.Publication{
		"127.0.0.1:8080:node-1:30080":  {Listen: "127.0.0.1:8080", NetNS: "mk-demo-client", Target: "10.200.0.11:30080", Process: "publish-127.0.0.1-8080"},
		"8081:node-2:30080":            {Listen: "127.0.0.1:8081", NetNS: "mk-demo-client", Target: "10.200.0.12:30080", Process: "publish-127.0.0.1-8081"},
		"127.0.0.2:80:10.200.0.200:80": {Listen: "127.0.0.2:80", NetNS: "mk-demo-client", Target: "10.200.0.200:80", Process: "publish-127.0.0.2-80"},
	} {
		got, err := ParsePublish(l, spec)
		if err != nil || got != want {
			t.Errorf("%s: got %+v, %v; want %+v", spec, got, err, want)
		}
	}
	for spec, wantErr := range map[string]string{
		"0.0.0.0:8080:node-1:30080": "loopback",
		"192.168.1.5:80:node-1:80":  "loopback",
		"8080:node-9:30080":         `neither a node of lab "demo"`,
		"8080:node-1":               "want [HOSTIP:]HOSTPORT:NODE:PORT",
		"99999:node-1:30080":        `port "99999"`,
		"8080:node-1:http":          `port "http"`,
		"127.0.0.1:1:2:3:node-1:80": "want [HOSTIP:]HOSTPORT:NODE:PORT",
	} {
		if _, err := ParsePublish(l, spec); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: got %v, want an error saying %q", spec, err, wantErr)
		}
	}
}
