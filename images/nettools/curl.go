package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// curl's exit statuses for the failures the suite tells apart.
const (
	curlResolve  = 6
	curlConnect  = 7
	curlHTTPFail = 22 // -f and a status >= 400
	curlTimeout  = 28
)

// curl fetches one URL as curl does with the options the suite uses: -s, -S, -q, -g
// (accepted), -i, -I, -o FILE, -w FORMAT (%{http_code}, %{response_code}), -m/--max-time,
// --connect-timeout, --interface IP, -f, -k, -L, -X, -H, -d, -v.
func curl(args []string) int {
	fs := pflag.NewFlagSet("curl", pflag.ContinueOnError)
	for _, f := range []struct{ long, short string }{{"silent", "s"}, {"show-error", "S"}, {"disable", "q"}, {"globoff", "g"}} {
		fs.BoolP(f.long, f.short, false, "accepted, no effect")
	}
	include := fs.BoolP("include", "i", false, "print the response headers")
	head := fs.BoolP("head", "I", false, "HEAD, print the headers")
	output := fs.StringP("output", "o", "", "write the body to FILE")
	format := fs.StringP("write-out", "w", "", "print FORMAT after the transfer")
	maxTime := fs.Float64P("max-time", "m", 0, "seconds for the whole transfer")
	connectTimeout := fs.Float64("connect-timeout", 0, "seconds for the connect")
	fail := fs.BoolP("fail", "f", false, "exit 22 on HTTP status >= 400")
	insecure := fs.BoolP("insecure", "k", false, "do not verify the server's certificate")
	follow := fs.BoolP("location", "L", false, "follow redirects")
	method := fs.StringP("request", "X", "", "method")
	headers := fs.StringArrayP("header", "H", nil, "extra header 'K: V'")
	data := fs.StringP("data", "d", "", "POST this body")
	verbose := fs.BoolP("verbose", "v", false, "print the exchange on stderr")
	iface := fs.String("interface", "", "connect from this local IP")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: curl [options] URL")
		return 2
	}
	raw := fs.Arg(0)
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	m := *method
	switch {
	case m != "":
	case *head:
		m = http.MethodHead
	case fs.Changed("data"):
		m = http.MethodPost
	default:
		m = http.MethodGet
	}
	ctx := context.Background()
	if *maxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, seconds(*maxTime))
		defer cancel()
	}
	var body io.Reader
	if fs.Changed("data") {
		body = strings.NewReader(*data)
	}
	req, err := http.NewRequestWithContext(ctx, m, raw, body)
	if err != nil {
		fmt.Fprintln(os.Stderr, "curl:", err)
		return 3
	}
	if fs.Changed("data") {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("User-Agent", "curl/8.0 (minik8s nettools)")
	for _, h := range *headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	dialer := &net.Dialer{Timeout: seconds(*connectTimeout)}
	if *iface != "" {
		ip := net.ParseIP(*iface)
		if ip == nil {
			fmt.Fprintf(os.Stderr, "curl: (45) --interface %q: only an IP address is supported\n", *iface)
			return 45
		}
		dialer.LocalAddr = &net.TCPAddr{IP: ip}
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext:     dialer.DialContext,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: *insecure},
	}}
	if !*follow {
		client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	if *verbose {
		fmt.Fprintf(os.Stderr, "> %s %s\n", m, req.URL.RequestURI())
	}
	resp, err := client.Do(req)
	if err != nil {
		code := curlStatus(err)
		if fs.Changed("write-out") {
			fmt.Print(writeOut(*format, 0))
		}
		fmt.Fprintf(os.Stderr, "curl: (%d) %v\n", code, err)
		return code
	}
	defer resp.Body.Close()
	if *verbose {
		fmt.Fprintf(os.Stderr, "< %s %s\n", resp.Proto, resp.Status)
	}
	out := io.Writer(os.Stdout)
	if *output != "" && *output != "-" {
		f, err := os.Create(*output)
		if err != nil {
			fmt.Fprintln(os.Stderr, "curl:", err)
			return 23
		}
		defer f.Close()
		out = f
	}
	if *fail && resp.StatusCode >= 400 {
		fmt.Fprintf(os.Stderr, "curl: (22) The requested URL returned error: %d\n", resp.StatusCode)
		return curlHTTPFail
	}
	if *include || *head {
		fmt.Fprintf(out, "%s %s\r\n", resp.Proto, resp.Status)
		resp.Header.Write(out)
		fmt.Fprint(out, "\r\n")
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		code := curlStatus(err)
		fmt.Fprintf(os.Stderr, "curl: (%d) %v\n", code, err)
		return code
	}
	if fs.Changed("write-out") {
		fmt.Print(writeOut(*format, resp.StatusCode))
	}
	return 0
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// writeOut expands -w's variables and backslash escapes.
func writeOut(format string, code int) string {
	status := fmt.Sprintf("%03d", code)
	return strings.NewReplacer("%{http_code}", status, "%{response_code}", status, `\n`, "\n", `\t`, "\t", `\r`, "\r").Replace(format)
}

// curlStatus maps a failed request to curl's exit status.
func curlStatus(err error) int {
	var dnsErr *net.DNSError
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case errors.As(err, &dnsErr):
		return curlResolve
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return curlTimeout
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return curlConnect
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return curlConnect
	}
	return 56 // failure receiving network data
}
