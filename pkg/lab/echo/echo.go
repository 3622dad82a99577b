// Package echo is the lab uplink's web server: it answers every request with the address
// the request came from, as a "what is my IP" service on the internet does, so egress
// masquerading and externalTrafficPolicy can be seen from outside the cluster.
package echo

import (
	"fmt"
	"net"
	"net/http"
)

// Handler writes the caller's IP address and a newline.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, host)
	})
}
