package apiserver

import (
	"net/http"
	"net/url"

	apiproxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// serveWebSocket answers the WebSocket requests kubectl 1.30+ makes first, as
// kube-apiserver does, since the node API (like the kubelet) speaks only SPDY to
// apiservers: exec and attach over v5.channel.k8s.io are translated to SPDY streams
// (StreamTranslatorHandler), port-forward's SPDY is tunnelled through the WebSocket
// (TunnelingHandler). ok is false for requests left to the plain proxy (SPDY, older
// WebSocket protocols, logs).
func (s *Server) serveWebSocket(w http.ResponseWriter, r *http.Request, nodeName, sub, path string, podQuery url.Values) bool {
	switch {
	case (sub == "exec" || sub == "attach") && wsstream.IsWebSocketRequestWithStreamCloseProtocol(r):
		target, err := s.nodeURL(r.Context(), nodeName)
		if err != nil {
			writeError(w, err)
			return true
		}
		target.Path, target.RawQuery = path, r.URL.RawQuery
		on := func(name string) bool { v := podQuery.Get(name); return v == "true" || v == "1" }
		opts := apiproxy.Options{Stdin: on("stdin"), Stdout: on("stdout"), Stderr: on("stderr"), Tty: on("tty")}
		apiproxy.NewStreamTranslatorHandler(target, s.nodeTransport, 0, opts).ServeHTTP(w, r)
		return true
	case sub == "portforward" && wsstream.IsWebSocketRequestWithTunnelingProtocol(r):
		apiproxy.NewTunnelingHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.proxyToNode(w, r, nodeName, path)
		})).ServeHTTP(w, r)
		return true
	}
	return false
}
