package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/spf13/pflag"
)

// nc is the client half of OpenBSD netcat as the suite uses it: `nc [-v] [-t|-u] [-z]
// [-w SEC] HOST PORT` sends stdin to HOST:PORT and copies what comes back to stdout
// until the peer closes or, with -w, nothing arrived for SEC seconds. -w also bounds the
// connect. Exit status 0 once connected, 1 otherwise.
func nc(args []string) int {
	fs := pflag.NewFlagSet("nc", pflag.ContinueOnError)
	verbose := fs.BoolP("verbose", "v", false, "report the connection on stderr")
	fs.BoolP("tcp", "t", true, "TCP (the default)")
	udp := fs.BoolP("udp", "u", false, "UDP instead of TCP")
	scan := fs.BoolP("zero", "z", false, "connect without sending anything")
	fs.BoolP("numeric", "n", false, "no name lookups (accepted, ignored)")
	wait := fs.IntP("wait", "w", 0, "timeout in seconds for the connect and for idle reads")
	if err := fs.Parse(args); err != nil || fs.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: nc [-v] [-t|-u] [-z] [-w SEC] HOST PORT")
		return 1
	}
	host, port := fs.Arg(0), fs.Arg(1)
	network := "tcp"
	if *udp {
		network = "udp"
	}
	timeout := time.Duration(*wait) * time.Second
	conn, err := net.DialTimeout(network, net.JoinHostPort(host, port), timeout)
	if err != nil {
		if *verbose {
			fmt.Fprintf(os.Stderr, "nc: connect to %s port %s (%s) failed: %v\n", host, port, network, err)
		}
		return 1
	}
	defer conn.Close()
	if *verbose {
		fmt.Fprintf(os.Stderr, "Connection to %s %s port [%s/*] succeeded!\n", host, port, network)
	}
	if *scan {
		return 0
	}
	if err := exchange(conn, os.Stdin, os.Stdout, timeout, *udp); err != nil {
		fmt.Fprintln(os.Stderr, "nc:", err)
		return 1
	}
	return 0
}

// exchange sends in to conn (closing conn's write side after it, for TCP) while it
// copies conn to out; it ends when conn has nothing more, or nothing for timeout.
func exchange(conn net.Conn, in io.Reader, out io.Writer, timeout time.Duration, udp bool) error {
	go func() {
		io.Copy(conn, in)
		if tcp, ok := conn.(*net.TCPConn); ok {
			tcp.CloseWrite()
		}
	}()
	buf := make([]byte, 64*1024)
	for {
		if timeout > 0 {
			conn.SetReadDeadline(time.Now().Add(timeout))
		}
		n, err := conn.Read(buf)
		out.Write(buf[:n])
		var netErr net.Error
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return nil
		case errors.As(err, &netErr) && netErr.Timeout():
			return nil // idle for -w seconds: done, as netcat
		case udp && errors.Is(err, net.ErrClosed):
			return nil
		default:
			return err
		}
	}
}
