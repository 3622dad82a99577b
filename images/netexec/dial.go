package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// dialTimeout bounds each try of /dial, as upstream's 5 s.
const dialTimeout = 5 * time.Second

// dialHandler: /dial?host=H&port=P&request=R&protocol=http|udp&tries=N sends R N times
// and answers {"responses":[...],"errors":[...]} with 200. As upstream, "responses" is
// there only when the last try answered something, and "errors" only when a try failed;
// H is resolved once per call.
func dialHandler(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	host, port, request, protocol := q.Get("host"), q.Get("port"), q.Get("request"), q.Get("protocol")
	tries := 1
	if raw := q.Get("tries"); raw != "" {
		var err error
		if tries, err = strconv.Atoi(raw); err != nil {
			http.Error(w, fmt.Sprintf("tries parameter is invalid. %v", err), http.StatusBadRequest)
			return
		}
	}
	if request == "" {
		http.Error(w, "request parameter not specified.", http.StatusBadRequest)
		return
	}
	hostPort := net.JoinHostPort(host, port)
	var addr net.Addr
	var dial func(string, net.Addr) (string, error)
	var err error
	switch strings.ToLower(protocol) {
	case "", "http":
		addr, err = net.ResolveTCPAddr("tcp", hostPort)
		dial = dialHTTP
	case "udp":
		addr, err = net.ResolveUDPAddr("udp", hostPort)
		dial = dialUDP
	default:
		http.Error(w, fmt.Sprintf("unsupported protocol. %s", protocol), http.StatusBadRequest)
		return
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("host and/or port param are invalid. %v", err), http.StatusBadRequest)
		return
	}

	responses, errs := []string{}, []string{}
	var last string
	for range tries {
		last, err = dial(request, addr)
		if err != nil {
			errs = append(errs, err.Error())
		} else {
			responses = append(responses, last)
		}
	}
	out := map[string][]string{}
	if last != "" {
		out["responses"] = responses
	}
	if len(errs) > 0 {
		out["errors"] = errs
	}
	writeJSON(w, http.StatusOK, out)
}

// dialHTTP GETs http://addr/request on a fresh connection.
func dialHTTP(request string, addr net.Addr) (string, error) {
	client := &http.Client{Timeout: dialTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(fmt.Sprintf("http://%s/%s", addr, request))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	return string(body), nil
}

// dialUDP sends request as one datagram and waits for one answer.
func dialUDP(request string, addr net.Addr) (string, error) {
	conn, err := net.DialUDP("udp", nil, addr.(*net.UDPAddr))
	if err != nil {
		return "", fmt.Errorf("udp dial failed. err:%v", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(request)); err != nil {
		return "", fmt.Errorf("udp connection write failed. err:%v", err)
	}
	buf := make([]byte, 2048)
	conn.SetReadDeadline(time.Now().Add(dialTimeout))
	n, err := conn.Read(buf)
	if err != nil || n == 0 {
		return "", fmt.Errorf("reading from udp connection failed. err:'%v'", err)
	}
	return string(buf[:n]), nil
}
