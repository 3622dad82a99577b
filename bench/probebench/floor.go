package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/minik8s/minik8s/pkg/probe"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"
)

// The floor: what any prober pays in the lab for the probed phase's connections. A
// child process of probebench, started in the node's network namespace, makes the same
// connections to the same pods on the same 100 ms grid as minilet's probes (per pod: a
// TCP connect and close to 8080, an HTTP/1.1 GET /healthz with Connection: close read to
// EOF on 8080, a gRPC Health/Check on a fresh HTTP/2 connection to 8082), at one of two
// levels:
//   - bare: one thread, blocking system calls, requests encoded once: little beyond the
//     kernel's work for each connection (its system time is that work);
//   - workers: pkg/probe's workers and handlers as minilet runs them (a goroutine per
//     probe, Go's net package), without the rest of minilet.
// probebench reads the child's CPU from /proc like minilet's.

// The probed ports: netexec's HTTP server (the httpGet and tcpSocket probes) and its gRPC
// health server.
const httpPort, grpcPort = 8080, 8082

const grid = 100 * time.Millisecond // minilet's probe grid

// floorPorts are the ports the floor client probes on each pod.
type floorPorts struct{ http, grpc int }

// floorClient runs mode ("bare" or "workers") against the pods at ips for d and returns
// how many probes succeeded and failed, and the first failure's message.
func floorClient(mode string, ips []netip.Addr, ports floorPorts, d time.Duration) (ok, failed int64, first string, err error) {
	var okN, failedN atomic.Int64
	var firstErr atomic.Value
	count := func(err error) {
		if err == nil {
			okN.Add(1)
			return
		}
		failedN.Add(1)
		firstErr.CompareAndSwap(nil, err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	switch mode {
	case "bare":
		bareClient(ctx, ips, ports, count)
	case "workers":
		workersClient(ctx, ips, ports, count)
	default:
		return 0, 0, "", fmt.Errorf("unknown floor client %q (bare, workers)", mode)
	}
	first, _ = firstErr.Load().(string)
	return okN.Load(), failedN.Load(), first, nil
}

// bareTarget is one probe of the bare client: its address and exchange.
type bareTarget struct {
	addr  unix.SockaddrInet4
	slot  int // which 100 ms of the second it falls in
	probe func(fd int) error
}

// bareClient makes every target's connection once a second in its slot of the grid,
// one after another on one locked thread with blocking system calls (a 1 s timeout on
// each), so the process does nothing per probe but the system calls.
func bareClient(ctx context.Context, ips []netip.Addr, ports floorPorts, count func(error)) {
	runtime.LockOSThread()
	var targets []bareTarget
	for _, ip := range ips {
		httpReq := []byte("GET /healthz HTTP/1.1\r\nHost: " + net.JoinHostPort(ip.String(), strconv.Itoa(ports.http)) +
			"\r\nUser-Agent: kube-probe/1.32\r\nAccept: */*\r\nConnection: close\r\n\r\n")
		h2Call := grpcCallFrames(net.JoinHostPort(ip.String(), strconv.Itoa(ports.grpc)))
		targets = append(targets,
			bareTarget{addr: unix.SockaddrInet4{Port: ports.http, Addr: ip.As4()}, probe: func(int) error { return nil }},
			bareTarget{addr: unix.SockaddrInet4{Port: ports.http, Addr: ip.As4()}, probe: func(fd int) error { return bareHTTP(fd, httpReq) }},
			bareTarget{addr: unix.SockaddrInet4{Port: ports.grpc, Addr: ip.As4()}, probe: func(fd int) error { return bareGRPC(fd, h2Call) }},
		)
	}
	bySlot := make([][]*bareTarget, time.Second/grid)
	for i := range targets {
		t := &targets[i]
		t.slot = rand.IntN(len(bySlot))
		bySlot[t.slot] = append(bySlot[t.slot], t)
	}
	next := time.Now().Truncate(grid).Add(grid)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
		for _, t := range bySlot[next.Nanosecond()/int(grid)%len(bySlot)] {
			count(bareConnect(t))
		}
		next = next.Add(grid)
		for time.Until(next) < 0 { // a slow tick: skip the slots it overran, as a ticker does
			next = next.Add(grid)
		}
	}
}

// bareConnect opens a blocking connection to t, runs its exchange and closes it.
func bareConnect(t *bareTarget) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	timeout := unix.Timeval{Sec: 1}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &timeout) // also bounds connect
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &timeout)
	if err := connect(fd, &t.addr); err != nil {
		return fmt.Errorf("connect %v:%d: %w", netip.AddrFrom4(t.addr.Addr), t.addr.Port, err)
	}
	return t.probe(fd)
}

// connect is a blocking connect; one a signal interrupted (Go's runtime preempts with
// signals) goes on in the kernel, so it waits for the outcome.
func connect(fd int, addr unix.Sockaddr) error {
	err := unix.Connect(fd, addr)
	if err != unix.EINTR {
		return err
	}
	for {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		n, err := unix.Poll(pfd, 1000)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return unix.ETIMEDOUT
		}
		errno, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
		if err == nil && errno != 0 {
			err = unix.Errno(errno)
		}
		return err
	}
}

// restarted is op (unix.Read or unix.Write) on fd, restarted when a signal interrupts it.
func restarted(op func(int, []byte) (int, error), fd int, b []byte) (int, error) {
	for {
		n, err := op(fd, b)
		if err != unix.EINTR {
			return n, err
		}
	}
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := restarted(unix.Write, fd, b)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// bareHTTP sends the GET and reads the response to EOF (the server closes: Connection: close).
func bareHTTP(fd int, req []byte) error {
	if err := writeAll(fd, req); err != nil {
		return err
	}
	var buf [4 << 10]byte
	var head []byte
	for {
		n, err := restarted(unix.Read, fd, buf[:])
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		if head == nil {
			head = bytes.Clone(buf[:min(n, 12)])
		}
	}
	if !bytes.HasPrefix(head, []byte("HTTP/1.1 200")) {
		return fmt.Errorf("HTTP response %q", head)
	}
	return nil
}

// h2Call is a gRPC Health/Check, encoded once: what goes before and after the server's settings.
type h2Call struct{ hello, call []byte }

// grpcCallFrames encodes minilet's exchange: the client preface and empty SETTINGS, then
// the SETTINGS ack with one HEADERS and DATA of Health/Check (the kubelet's headers, an
// empty HealthCheckRequest).
func grpcCallFrames(authority string) h2Call {
	var hello, call, block bytes.Buffer
	hello.WriteString(http2.ClientPreface)
	http2.NewFramer(&hello, nil).WriteSettings()
	enc := hpack.NewEncoder(&block)
	for _, h := range [][2]string{
		{":method", "POST"}, {":scheme", "http"}, {":path", "/grpc.health.v1.Health/Check"}, {":authority", authority},
		{"content-type", "application/grpc"}, {"user-agent", "kube-probe/1.32 grpc-go/" + grpc.Version}, {"te", "trailers"},
		{"grpc-timeout", "999m"},
	} {
		enc.WriteField(hpack.HeaderField{Name: h[0], Value: h[1]})
	}
	fr := http2.NewFramer(&call, nil)
	fr.WriteSettingsAck()
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndHeaders: true})
	fr.WriteData(1, true, []byte{0, 0, 0, 0, 0}) // an uncompressed empty message
	return h2Call{hello: hello.Bytes(), call: call.Bytes()}
}

// bareGRPC runs the call: hello, frames up to the server's SETTINGS, the call, frames up
// to the end of stream 1 (answering PINGs as minilet does); success for a response
// message of SERVING (field 1 = 1).
func bareGRPC(fd int, c h2Call) error {
	if err := writeAll(fd, c.hello); err != nil {
		return err
	}
	r := frameReader{fd: fd}
	for {
		typ, flags, _, _, err := r.next()
		if err != nil {
			return err
		}
		if http2.FrameType(typ) == http2.FrameSettings && flags&byte(http2.FlagSettingsAck) == 0 {
			break
		}
	}
	if err := writeAll(fd, c.call); err != nil {
		return err
	}
	serving := false
	for {
		typ, flags, stream, payload, err := r.next()
		if err != nil {
			return err
		}
		switch http2.FrameType(typ) {
		case http2.FramePing:
			if flags&byte(http2.FlagPingAck) == 0 {
				ack := append([]byte{0, 0, 8, byte(http2.FramePing), byte(http2.FlagPingAck), 0, 0, 0, 0}, payload...)
				if err := writeAll(fd, ack); err != nil {
					return err
				}
			}
		case http2.FrameData:
			serving = stream == 1 && bytes.HasSuffix(payload, []byte{0x08, 0x01})
		}
		if stream == 1 && flags&byte(http2.FlagDataEndStream) != 0 && (http2.FrameType(typ) == http2.FrameHeaders || http2.FrameType(typ) == http2.FrameData) {
			break
		}
	}
	if !serving {
		return errors.New("gRPC health: no SERVING response")
	}
	return nil
}

// frameReader reads HTTP/2 frames from a blocking socket with no allocation per frame.
type frameReader struct {
	fd       int
	buf      [16 << 10]byte
	from, to int
}

// next returns the next frame (its payload valid until the next call).
func (r *frameReader) next() (typ, flags byte, stream uint32, payload []byte, err error) {
	if err := r.fill(9); err != nil {
		return 0, 0, 0, nil, err
	}
	h := r.buf[r.from : r.from+9]
	n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
	typ, flags, stream = h[3], h[4], binary.BigEndian.Uint32(h[5:])&(1<<31-1)
	if 9+n > len(r.buf) {
		return 0, 0, 0, nil, fmt.Errorf("HTTP/2 frame of %d bytes", n)
	}
	if err := r.fill(9 + n); err != nil {
		return 0, 0, 0, nil, err
	}
	payload = r.buf[r.from+9 : r.from+9+n]
	r.from += 9 + n
	return typ, flags, stream, payload, nil
}

// fill reads until n bytes are buffered.
func (r *frameReader) fill(n int) error {
	if r.from+n > len(r.buf) {
		r.to = copy(r.buf[:], r.buf[r.from:r.to])
		r.from = 0
	}
	for r.to-r.from < n {
		m, err := restarted(unix.Read, r.fd, r.buf[r.to:])
		if err != nil {
			return err
		}
		if m == 0 {
			return errors.New("HTTP/2: connection closed")
		}
		r.to += m
	}
	return nil
}

// workersClient runs pkg/probe's workers and handlers for the same probes, as minilet's
// prober does (a worker goroutine per probe on the grid, probe.Run with a 1 s timeout),
// without minilet's metrics, results and status.
func workersClient(ctx context.Context, ips []netip.Addr, ports floorPorts, count func(error)) {
	handlers := []corev1.ProbeHandler{
		{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(ports.http)}},
		{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt(ports.http)}},
		{GRPC: &corev1.GRPCAction{Port: int32(ports.grpc)}},
	}
	c := &corev1.Container{Name: "netexec"}
	for _, ip := range ips {
		for _, h := range handlers {
			p := &corev1.Probe{ProbeHandler: h, PeriodSeconds: 1, TimeoutSeconds: 1}
			w := &probe.Worker{Kind: probe.Readiness, Probe: p, Clock: clock.RealClock{},
				Run: func(ctx context.Context) (probe.Result, string) { return probe.Run(ctx, p, c, ip.String(), nil) },
				Report: func(r probe.Result, out string, _ probe.Result, _ bool) {
					if ctx.Err() != nil {
						return // cut off by the run's end, not the server's answer
					}
					if r != probe.Success {
						count(errors.New(out))
						return
					}
					count(nil)
				}}
			go w.Loop(ctx)
		}
	}
	<-ctx.Done()
}

// runFloorClient is the child's entry: probebench -floor-client MODE -floor-for D IP...
func runFloorClient(mode string, d time.Duration, args []string) {
	var ips []netip.Addr
	for _, a := range args {
		ip, err := netip.ParseAddr(a)
		if err != nil || !ip.Is4() {
			fmt.Fprintf(os.Stderr, "probebench: floor client: %q is not an IPv4 address\n", a)
			os.Exit(2)
		}
		ips = append(ips, ip)
	}
	ok, failed, first, err := floorClient(mode, ips, floorPorts{httpPort, grpcPort}, d)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probebench:", err)
		os.Exit(2)
	}
	fmt.Printf("%d %d %q\n", ok, failed, first) // what runFloor reads
}
