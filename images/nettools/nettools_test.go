package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// tool builds nettools once per test and returns the path of a link named name to it.
func tool(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "nettools")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	link := filepath.Join(dir, name)
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// run returns stdout and the exit status.
func run(t *testing.T, stdin string, name string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); ok {
		return out.String(), exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), 0
}

func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	return l.Addr().String()
}

// TestCurl: the command lines of the suite's networking tests, with curl's output and
// exit statuses.
func TestCurl(t *testing.T) {
	curl := tool(t, "curl")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			time.Sleep(3 * time.Second)
		case "/missing":
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "%s %s", r.Method, r.URL.RequestURI())
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	for _, tc := range []struct {
		args []string
		out  string
		code int
	}{
		{[]string{"-g", "-q", "-s", "http://" + host + "/dial?request=hostname&tries=1"}, "GET /dial?request=hostname&tries=1", 0},
		{[]string{"-q", "-s", "--connect-timeout", "2", host + "/hostname"}, "GET /hostname", 0},
		{[]string{"-g", "-q", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://" + host + "/missing"}, "404", 0},
		{[]string{"-s", "-f", "http://" + host + "/missing"}, "", 22},
		{[]string{"-s", "--interface", "127.0.0.1", host + "/i"}, "GET /i", 0},
		{[]string{"-s", "--interface", "192.0.2.1", host + "/i"}, "", 7}, // not a local address
		{[]string{"-s", "-X", "POST", "-d", "x=1", "http://" + host + "/p"}, "POST /p", 0},
		{[]string{"-s", "--max-time", "1", "http://" + host + "/slow"}, "", 28},
		{[]string{"-s", "--connect-timeout", "1", "-w", "%{http_code}", "http://" + closedPort(t) + "/"}, "000", 7},
	} {
		out, code := run(t, "", curl, tc.args...)
		if out != tc.out || code != tc.code {
			t.Errorf("curl %s = %q, exit %d; want %q, exit %d", strings.Join(tc.args, " "), out, code, tc.out, tc.code)
		}
	}
	out, _ := run(t, "", curl, "-i", "-q", "-s", "http://"+host+"/x")
	if !strings.HasPrefix(out, "HTTP/1.1 200 OK\r\n") || !strings.HasSuffix(out, "\r\n\r\nGET /x") {
		t.Errorf("curl -i = %q", out)
	}
}

// TestNC: the service reachability checks (echo hostName | nc -v -t|-u -w 2 HOST PORT).
func TestNC(t *testing.T) {
	nc := tool(t, "nc")
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	go func() {
		buf := make([]byte, 100)
		for {
			n, addr, err := udp.ReadFrom(buf)
			if err != nil {
				return
			}
			udp.WriteTo(bytes.ToUpper(buf[:n]), addr)
		}
	}()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	go func() {
		for {
			c, err := tcp.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 100)
			n, _ := c.Read(buf)
			c.Write(append([]byte("got "), buf[:n]...))
			c.Close()
		}
	}()
	split := func(addr string) []string { h, p, _ := net.SplitHostPort(addr); return []string{h, p} }

	start := time.Now()
	out, code := run(t, "hostName\n", nc, append([]string{"-v", "-u", "-w", "1"}, split(udp.LocalAddr().String())...)...)
	if out != "HOSTNAME\n" || code != 0 || time.Since(start) > 5*time.Second {
		t.Errorf("nc -u = %q, exit %d, after %v", out, code, time.Since(start))
	}
	out, code = run(t, "hostName\n", nc, append([]string{"-v", "-t", "-w", "2"}, split(tcp.Addr().String())...)...)
	if out != "got hostName\n" || code != 0 {
		t.Errorf("nc -t = %q, exit %d", out, code)
	}
	if _, code := run(t, "x", nc, append([]string{"-v", "-w", "1"}, split(closedPort(t))...)...); code != 1 {
		t.Errorf("nc to a closed port exited %d, want 1", code)
	}
}

func TestShPrelude(t *testing.T) {
	const p = "nc() { /usr/bin/nc \"$@\"; }; "
	for _, tc := range []struct{ in, want []string }{
		{[]string{"-c", "nc -u x 1"}, []string{"-c", p + "\nnc -u x 1"}},
		{[]string{"-x", "-c", "echo", "name"}, []string{"-x", "-c", p + "\necho", "name"}},
		{[]string{"-ec", "true"}, []string{"-ec", p + "\ntrue"}},
		{[]string{"-o", "pipefail", "-c", "true"}, []string{"-o", "pipefail", "-c", p + "\ntrue"}},
		{[]string{"script.sh", "-c"}, []string{"script.sh", "-c"}},
		{[]string{"-e", "script.sh"}, []string{"-e", "script.sh"}},
	} {
		if got := withPrelude(tc.in, p); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("withPrelude(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "nc"), []byte("#!/bin/true\n"), 0o755)
	os.Symlink("/bin/busybox", filepath.Join(dir, "wget"))
	os.Symlink("nc", filepath.Join(dir, "nslookup"))
	if want := "nc() { " + dir + "/nc \"$@\"; }; nslookup() { " + dir + "/nslookup \"$@\"; }; "; prelude(dir) != want {
		t.Errorf("prelude = %q, want %q: links to busybox are its applets", prelude(dir), want)
	}
}

// sh is busybox's ash, whose messages the suite expects, unless the environment holds a
// variable ash would drop: then bash, which passes it on (this host's busybox-static and
// bash stand in for the image's).
func TestShKeepsVariablesAndAshMessages(t *testing.T) {
	sh := tool(t, "sh")
	cmd := exec.Command(sh, "-c", "echo x > /nonexistent/file 2>&1")
	out, _ := cmd.CombinedOutput()
	if want := sh + ": can't create /nonexistent/file"; !strings.HasPrefix(string(out), want) {
		t.Errorf("sh -c 'echo x > /nonexistent/file': %q, want ash's %q", out, want)
	}
	cmd = exec.Command(sh, "-c", "env")
	cmd.Env = []string{"data-1=value-1", "PATH=/usr/bin:/bin"}
	if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), "data-1=value-1\n") {
		t.Errorf("sh -c env: %v, %q lacks data-1=value-1", err, out)
	}
}

// Debian's ash drops variables whose names are no shell identifiers; sh then runs bash.
func TestShDropsVariables(t *testing.T) {
	for env, want := range map[string]bool{
		"PATH=/bin,HOME=/root,_x1=a": false,
		"PATH=/bin,data-1=value-1":   true,
		"1st=x":                      true,
		"a.b=x":                      true,
	} {
		if got := dropsVariables(strings.Split(env, ",")); got != want {
			t.Errorf("dropsVariables(%s) = %v, want %v", env, got, want)
		}
	}
}

// TestDig: the DNS tests' probes against a server on loopback that knows one name in
// the search list's second domain, over UDP and TCP.
func TestDig(t *testing.T) {
	mux := dns.NewServeMux()
	mux.HandleFunc(".", func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		switch {
		case q.Name == "web.svc.cluster.local." && q.Qtype == dns.TypeA:
			rr, _ := dns.NewRR("web.svc.cluster.local. 30 IN A 10.96.0.10")
			m.Answer = append(m.Answer, rr)
		case q.Name == "_http._tcp.web.svc.cluster.local." && q.Qtype == dns.TypeSRV:
			rr, _ := dns.NewRR("_http._tcp.web.svc.cluster.local. 30 IN SRV 0 100 80 web.svc.cluster.local.")
			m.Answer = append(m.Answer, rr)
		default:
			m.Rcode = dns.RcodeNameError
		}
		w.WriteMsg(m)
	})
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(pc.LocalAddr().(*net.UDPAddr).Port)
	l, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	udpSrv, tcpSrv := &dns.Server{PacketConn: pc, Handler: mux}, &dns.Server{Listener: l, Handler: mux}
	go udpSrv.ActivateAndServe()
	go tcpSrv.ActivateAndServe()
	defer udpSrv.Shutdown()
	defer tcpSrv.Shutdown()
	conf := filepath.Join(t.TempDir(), "resolv.conf")
	os.WriteFile(conf, []byte("nameserver 127.0.0.1\nsearch ns.svc.cluster.local svc.cluster.local\noptions ndots:5\n"), 0o644)

	for _, tc := range []struct {
		args string
		out  string
	}{
		{"+notcp +noall +answer +search web A", "web.svc.cluster.local.\t30\tIN\tA\t10.96.0.10\n"},
		{"+tcp +noall +answer +search web A", "web.svc.cluster.local.\t30\tIN\tA\t10.96.0.10\n"},
		{"+noall +answer web A", ""}, // no search: web. does not exist
		{"+short _http._tcp.web.svc.cluster.local SRV", "0 100 80 web.svc.cluster.local.\n"},
		{"+notcp +noall +answer +search other A", ""},
	} {
		var out bytes.Buffer
		if code := digWith(conf, append([]string{"-p", port}, strings.Fields(tc.args)...), &out); code != 0 || out.String() != tc.out {
			t.Errorf("dig %s = %q, exit %d; want %q", tc.args, out.String(), code, tc.out)
		}
	}
}
