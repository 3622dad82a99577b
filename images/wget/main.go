// Command wget is the wget of our images, in place of busybox's applet: Debian bookworm
// builds busybox-static without FEATURE_WGET_TIMEOUT, and its wget then dies of a
// segmentation fault on -T (it parses the option into a NULL destination), which probes
// and scripts written for other busybox images use (our images' sh is bash, which finds
// this on PATH where busybox's ash would run its applet). It takes
// busybox wget's common options, in getopt's forms (-qO-, -T2, --timeout=2): -q, -O FILE
// ("-" for stdout), -T SEC, -S, -U AGENT, --header 'K: V', --post-data DATA, --spider.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "wget:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	// pflag reads options as busybox's getopt does: -qO- (short options run together, a
	// value joined to its option), --timeout=2, and options after the URL.
	fs := pflag.NewFlagSet("wget", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	quiet := fs.BoolP("quiet", "q", false, "quiet")
	output := fs.StringP("output-document", "O", "", "save to FILE ('-' for stdout)")
	timeout := fs.Float64P("timeout", "T", 0, "network read timeout in seconds (0: none)")
	showHeaders := fs.BoolP("server-response", "S", false, "show server response")
	agent := fs.StringP("user-agent", "U", "Wget", "User-Agent")
	spider := fs.Bool("spider", false, "only check the URL exists")
	postData := fs.String("post-data", "", "send DATA in a POST")
	hdrs := fs.StringArray("header", nil, "'NAME: VALUE' (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: wget [-q] [-O FILE] [-T SEC] [-S] [-U AGENT] [--header 'K: V'] [--post-data DATA] [--spider] URL")
	}
	if *timeout < 0 {
		return fmt.Errorf("-T %v: want seconds >= 0", *timeout)
	}
	u, err := url.Parse(fs.Arg(0))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("bad URL %q: want http:// or https://", fs.Arg(0))
	}
	method, body := http.MethodGet, io.Reader(nil)
	if *postData != "" {
		method, body = http.MethodPost, strings.NewReader(*postData)
	}
	req, err := http.NewRequest(method, u.String(), body)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", *agent)
	if *postData != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, h := range *hdrs {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			return fmt.Errorf("--header %q: want 'NAME: VALUE'", h)
		}
		req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	// -T bounds connecting and each wait for data, as busybox's; 0 waits as long as it takes.
	client := &http.Client{}
	if *timeout > 0 {
		d := time.Duration(*timeout * float64(time.Second))
		client.Transport = &http.Transport{Proxy: http.ProxyFromEnvironment,
			DialContext: (&deadlineDialer{timeout: d}).DialContext, ResponseHeaderTimeout: d, TLSHandshakeTimeout: d}
	}
	if !*quiet {
		fmt.Fprintf(stderr, "Connecting to %s\n", u.Host)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if *showHeaders {
		fmt.Fprintf(stderr, "  %s %s\n", resp.Proto, resp.Status)
		for k, vs := range resp.Header {
			for _, v := range vs {
				fmt.Fprintf(stderr, "  %s: %s\n", k, v)
			}
		}
	}
	if resp.StatusCode >= 400 {
		return fmt.Errorf("server returned error: %s %s", resp.Proto, resp.Status)
	}
	if *spider {
		if !*quiet {
			fmt.Fprintln(stderr, "remote file exists")
		}
		return nil
	}
	var out io.Writer = stdout
	if *output != "-" {
		name := *output
		if name == "" {
			if name = path.Base(u.Path); name == "/" || name == "." {
				name = "index.html"
			}
		}
		f, err := os.Create(name)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
		if !*quiet {
			fmt.Fprintf(stderr, "saving to '%s'\n", name)
		}
	}
	_, err = io.Copy(out, resp.Body)
	return err
}

// deadlineDialer connects within timeout and gives every read of the connection timeout
// to bring data: a server that stops sending fails the download, one that keeps sending
// does not.
type deadlineDialer struct{ timeout time.Duration }

func (d *deadlineDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: d.timeout}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &deadlineConn{Conn: c, timeout: d.timeout}, nil
}

type deadlineConn struct {
	net.Conn
	timeout time.Duration
}

func (c *deadlineConn) Read(b []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}
