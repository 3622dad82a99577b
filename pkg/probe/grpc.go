package probe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// grpcUserAgent is what the kubelet's gRPC client sends: its User-Agent, then grpc-go's.
var grpcUserAgent = userAgent + " grpc-go/" + grpc.Version

// maxGRPCResponse bounds what a health response may send (a HealthCheckResponse is a
// few bytes), so a misbehaving server cannot grow minilet's memory.
const maxGRPCResponse = 16 << 10

// GRPC is the grpc handler: grpc.health.v1 Health/Check must answer SERVING. Like the
// kubelet's (a blocking grpc.Dial, then the call) it opens a new connection, waits for
// the server's HTTP/2 settings (the connection is ready), makes the one call and closes
// the connection; it speaks that one exchange itself rather than set up a gRPC client
// (resolver, balancer, transport goroutines) for each probe, which cost minilet more
// than twice the CPU. The messages are the kubelet's; unlike the kubelet's dial, which
// retries until the timeout, a refused connection fails the probe at once.
func GRPC(ctx context.Context, addr, service string) (Result, string) {
	timeout := deadlineOf(ctx) // the probe's timeout, for the messages, before it runs out
	conn, err := probeDialer.DialContext(ctx, "tcp", addr)
	if err == nil {
		defer conn.Close()
		// The probe's deadline and its cancellation end any read or write on the connection.
		if d, ok := ctx.Deadline(); ok {
			conn.SetDeadline(d)
		}
		defer context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })()
	}
	call := healthCall{conn: conn}
	if err == nil {
		err = call.handshake(addr)
	}
	if err != nil {
		if timedOut(ctx, err) {
			return Failure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, context.DeadlineExceeded)
		}
		return Failure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err)
	}
	resp, err := call.check(ctx, service)
	if err != nil {
		st, isStatus := status.FromError(err)
		switch {
		case timedOut(ctx, err) || st.Code() == codes.DeadlineExceeded:
			return Failure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)
		case st.Code() == codes.Unimplemented:
			return Failure, fmt.Sprintf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.Message())
		case !isStatus: // the connection failed: what grpc-go reports as Unavailable
			err = status.Error(codes.Unavailable, "connection error: "+err.Error())
		}
		return Failure, fmt.Sprintf("error: health rpc probe failed: %+v", err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return Failure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String())
	}
	return Success, "service healthy"
}

// timedOut: err came from the probe's deadline (the connection's, which is the same and
// may pass a moment before the context notices). The clock is read too, as grpc-go reads it
// for a stream the server cancelled: on a loaded node the context's timer may fire after
// the server's RST_STREAM for the same deadline has arrived.
func timedOut(ctx context.Context, err error) bool {
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return true
	}
	return ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded)
}

// healthCall is one Health/Check on a fresh HTTP/2 connection (stream 1), read and
// written by the probe's own goroutine.
type healthCall struct {
	conn      net.Conn
	authority string
	out       bytes.Buffer // frames to send, written to conn in one go
	framer    *http2.Framer
}

// handshake sends the client preface and reads frames until the server's settings: the
// point at which grpc-go calls a connection ready.
func (c *healthCall) handshake(authority string) error {
	c.authority = authority
	c.framer = http2.NewFramer(&c.out, bufio.NewReaderSize(c.conn, 4<<10))
	c.framer.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.framer.MaxHeaderListSize = maxGRPCResponse
	c.out.WriteString(http2.ClientPreface)
	if err := c.framer.WriteSettings(); err != nil {
		return err
	}
	if err := c.flush(); err != nil {
		return err
	}
	for {
		f, err := c.framer.ReadFrame()
		if err != nil {
			return err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				return c.framer.WriteSettingsAck() // sent with the request
			}
		case *http2.GoAwayFrame:
			return fmt.Errorf("the server sent GOAWAY (%v)", f.ErrCode)
		}
	}
}

// check makes the call and reads its response up to the end of stream 1.
func (c *healthCall) check(ctx context.Context, service string) (*healthpb.HealthCheckResponse, error) {
	req, err := proto.Marshal(&healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, h := range [][2]string{
		{":method", "POST"}, {":scheme", "http"}, {":path", "/grpc.health.v1.Health/Check"}, {":authority", c.authority},
		{"content-type", "application/grpc"}, {"user-agent", grpcUserAgent}, {"te", "trailers"},
		{"grpc-timeout", grpcTimeout(ctx)},
	} {
		if h[1] != "" {
			enc.WriteField(hpack.HeaderField{Name: h[0], Value: h[1]})
		}
	}
	if err := c.framer.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndHeaders: true}); err != nil {
		return nil, err
	}
	msg := make([]byte, 5, 5+len(req)) // the gRPC message prefix: not compressed, length
	binary.BigEndian.PutUint32(msg[1:], uint32(len(req)))
	if err := c.framer.WriteData(1, true, append(msg, req...)); err != nil {
		return nil, err
	}
	if err := c.flush(); err != nil {
		return nil, err
	}

	var headers, trailers []hpack.HeaderField
	var data []byte
	for ended := false; !ended; {
		f, err := c.framer.ReadFrame()
		if err != nil {
			return nil, err
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if f.StreamID != 1 {
				continue
			}
			if headers == nil {
				headers = f.Fields
			} else {
				trailers = f.Fields
			}
			ended = f.StreamEnded()
		case *http2.DataFrame:
			if f.StreamID != 1 {
				continue
			}
			if len(data)+len(f.Data()) > maxGRPCResponse {
				return nil, status.Errorf(codes.ResourceExhausted, "the response is larger than %d bytes", maxGRPCResponse)
			}
			data = append(data, f.Data()...)
			ended = f.StreamEnded()
		case *http2.RSTStreamFrame:
			if f.StreamID == 1 {
				return nil, status.Errorf(rstCode(f.ErrCode), "stream terminated by RST_STREAM with error code: %v", f.ErrCode)
			}
		case *http2.GoAwayFrame:
			return nil, status.Errorf(codes.Unavailable, "the server sent GOAWAY (%v)", f.ErrCode)
		case *http2.PingFrame:
			if !f.IsAck() {
				c.framer.WritePing(true, f.Data)
				if err := c.flush(); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := responseStatus(headers, trailers); err != nil {
		return nil, err
	}
	if len(data) < 5 || data[0] != 0 || int(binary.BigEndian.Uint32(data[1:5])) != len(data)-5 {
		return nil, status.Error(codes.Internal, "the server sent no well-formed uncompressed response message")
	}
	resp := &healthpb.HealthCheckResponse{}
	if err := proto.Unmarshal(data[5:], resp); err != nil {
		return nil, status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)
	}
	return resp, nil
}

func (c *healthCall) flush() error {
	_, err := c.conn.Write(c.out.Bytes())
	c.out.Reset()
	return err
}

// responseStatus is the call's status: from the trailers (or, for a trailers-only
// response, the headers), after checking that the server answered as a gRPC server.
func responseStatus(headers, trailers []hpack.HeaderField) error {
	get := func(fields []hpack.HeaderField, name string) (string, bool) {
		for _, f := range fields {
			if f.Name == name {
				return f.Value, true
			}
		}
		return "", false
	}
	if s, _ := get(headers, ":status"); s != "200" {
		code, _ := strconv.Atoi(s)
		return status.Errorf(httpStatusCode(code), "unexpected HTTP status code received from server: %s", s)
	}
	if ct, _ := get(headers, "content-type"); !strings.HasPrefix(ct, "application/grpc") {
		return status.Errorf(codes.Internal, "transport: received unexpected content-type %q", ct)
	}
	fields := trailers
	if fields == nil {
		fields = headers
	}
	s, ok := get(fields, "grpc-status")
	if !ok {
		return status.Error(codes.Internal, "server closed the stream without sending trailers")
	}
	code, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return status.Errorf(codes.Internal, "transport: malformed grpc-status: %q", s)
	}
	msg, _ := get(fields, "grpc-message")
	if unescaped, err := url.PathUnescape(msg); err == nil {
		msg = unescaped
	}
	if codes.Code(code) != codes.OK {
		return status.Error(codes.Code(code), msg)
	}
	return nil
}

// grpcTimeout is the grpc-timeout header for ctx's deadline (in milliseconds, rounded up).
func grpcTimeout(ctx context.Context) string {
	d, ok := ctx.Deadline()
	if !ok {
		return ""
	}
	return strconv.FormatInt(max(1, (time.Until(d)+time.Millisecond-1).Milliseconds()), 10) + "m"
}

// httpStatusCode is the gRPC code grpc-go gives a response whose HTTP status is not 200.
func httpStatusCode(s int) codes.Code {
	switch s {
	case 400:
		return codes.Internal
	case 401:
		return codes.Unauthenticated
	case 403:
		return codes.PermissionDenied
	case 404:
		return codes.Unimplemented
	case 429, 502, 503, 504:
		return codes.Unavailable
	}
	return codes.Unknown
}

// rstCode is the gRPC code grpc-go gives a stream the server reset.
func rstCode(c http2.ErrCode) codes.Code {
	switch c {
	case http2.ErrCodeRefusedStream:
		return codes.Unavailable
	case http2.ErrCodeCancel:
		return codes.Canceled
	case http2.ErrCodeEnhanceYourCalm:
		return codes.ResourceExhausted
	case http2.ErrCodeInadequateSecurity:
		return codes.PermissionDenied
	}
	return codes.Internal
}
