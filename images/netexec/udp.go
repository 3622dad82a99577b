package main

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
)

// serveUDP answers upstream's UDP commands (case-insensitive): "hostname", "echo MSG"
// (MSG lower-cased, as upstream), "clientip" and "serverport"; anything else is logged
// and left unanswered.
func serveUDP(conn net.PacketConn, port int, log *slog.Logger) {
	buf := make([]byte, 2048)
	for {
		n, addr, err := conn.ReadFrom(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				log.Error("udp read", "err", err)
			}
			return
		}
		reply, ok := udpReply(strings.ToLower(strings.TrimSpace(string(buf[:n]))), addr, port)
		log.Info("udp request", "client", addr.String(), "bytes", n, "answered", ok)
		if !ok {
			continue
		}
		if _, err := conn.WriteTo([]byte(reply), addr); err != nil {
			log.Warn("udp reply", "client", addr.String(), "err", err)
		}
	}
}

func udpReply(command string, client net.Addr, port int) (string, bool) {
	switch {
	case command == "hostname":
		name, _ := os.Hostname()
		return name, true
	case command == "clientip":
		return client.String(), true
	case command == "serverport":
		return strconv.Itoa(port), true
	case strings.HasPrefix(command, "echo "):
		return strings.TrimPrefix(command, "echo "), true
	}
	return "", false
}
