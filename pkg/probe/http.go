package probe

import (
	"bufio"
	"bytes"
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

	corev1 "k8s.io/api/core/v1"
)

// maxRedirects is where net/http's client (and so the kubelet's probe) stops following.
const maxRedirects = 10

// HTTP is the httpGet handler, as the kubelet's: a GET with the kubelet's User-Agent and
// Accept (unless the probe sets its own), the probe's headers (Host among them), no
// compression, no proxy, no TLS verification, a connection of its own closed after the
// response (keep-alives off); success for 200-299; redirects to the same host followed
// (at most 10), to another host not followed: a final 3xx is a warning. It speaks
// that one HTTP/1.1 exchange on the probe's own goroutine with net/http's request and
// response code rather than through an http.Transport, whose per-connection goroutines,
// dial queue and channels cost minilet more than the connection itself; the messages
// are net/http's.
func HTTP(ctx context.Context, u *url.URL, headers []corev1.HTTPHeader) (Result, string) {
	header, host := probeHeader(headers)
	first := u
	for redirects := 0; ; redirects++ {
		resp, body, err := httpGet(ctx, u, host, header)
		if err != nil {
			return Failure, (&url.Error{Op: "Get", URL: u.String(), Err: err}).Error()
		}
		if loc := resp.Header.Get("Location"); isRedirect(resp.StatusCode) && loc != "" {
			next, err := u.Parse(loc)
			if err != nil {
				return Failure, (&url.Error{Op: "Get", URL: u.String(), Err: fmt.Errorf("failed to parse Location header %q: %v", loc, err)}).Error()
			}
			if next.Hostname() == first.Hostname() { // another host: not followed, this response counts
				if redirects+1 == maxRedirects { // net/http refuses the 11th request
					return Failure, (&url.Error{Op: "Get", URL: next.String(), Err: errors.New("stopped after 10 redirects")}).Error()
				}
				if !isRelative(loc) {
					host = "" // net/http keeps a custom Host only through a relative redirect
				}
				u = next
				continue
			}
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return Success, body
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			return Warning, "Probe terminated redirects, Response body: " + body
		}
		return Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
	}
}

// probeHeader is the request's header as the kubelet builds it, and the Host the probe asks for.
func probeHeader(headers []corev1.HTTPHeader) (http.Header, string) {
	h := RequestHeader(headers, userAgent)
	host := h.Get("Host")
	h.Del("Host")
	h.Set("Connection", "close") // what net/http sends with keep-alives off
	return h, host
}

// RequestHeader is the header of a probe's or hook's GET as the kubelet's
// NewRequestForHTTPGetAction builds it: the handler's headers (Host among them), then
// userAgent and Accept */* unless they set their own (an empty Accept sends none).
func RequestHeader(headers []corev1.HTTPHeader, userAgent string) http.Header {
	h := http.Header{}
	for _, kv := range headers {
		h.Add(kv.Name, kv.Value)
	}
	if _, ok := h["User-Agent"]; !ok {
		h.Set("User-Agent", userAgent)
	}
	if _, ok := h["Accept"]; !ok {
		h.Set("Accept", "*/*")
	} else if h.Get("Accept") == "" {
		h.Del("Accept")
	}
	return h
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

func isRelative(loc string) bool {
	u, err := url.Parse(loc)
	return err == nil && !u.IsAbs()
}

// httpGet makes one GET on a new connection and reads the response with the first
// maxBody bytes of its body.
func httpGet(ctx context.Context, u *url.URL, host string, header http.Header) (*http.Response, string, error) {
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, "", fmt.Errorf("unsupported protocol scheme %q", u.Scheme)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	conn, err := probeDialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, "", err
	}
	defer conn.Close()
	// The probe's deadline and its cancellation end any read or write on the connection.
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	defer context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })()
	if u.Scheme == "https" {
		tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true, ServerName: u.Hostname()})
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, "", ctxErr(ctx, err)
		}
		conn = tc
	}
	if host == "" {
		host = u.Host
	}
	path := u.RequestURI()
	if !strings.HasPrefix(path, "/") {
		path = "/" + path // a URL with a host and a relative path, as url.URL.String writes it
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "GET %s HTTP/1.1\r\nHost: %s\r\n", path, host)
	if err := header.Write(&req); err != nil {
		return nil, "", err
	}
	req.WriteString("\r\n")
	if _, err := conn.Write(req.Bytes()); err != nil {
		return nil, "", ctxErr(ctx, err)
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 4<<10), &http.Request{Method: http.MethodGet})
	if err != nil {
		return nil, "", ctxErr(ctx, err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return resp, string(body), nil
}

// ctxErr is the error net/http's client reports when the probe's timeout ended an
// exchange (the kubelet sets the client's Timeout), or err.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() == context.DeadlineExceeded || errors.Is(err, os.ErrDeadlineExceeded) {
		return errors.New("context deadline exceeded (Client.Timeout exceeded while awaiting headers)")
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
