package connect

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/minik8s/minik8s/pkg/control/apiserver/responsewriters"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilproxy "k8s.io/apimachinery/pkg/util/proxy"
	apiproxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// serveWebSocket answers the WebSocket requests kubectl 1.30+ makes first, as
// kube-apiserver does, since the node API (like the kubelet) speaks only SPDY to
// apiservers: exec and attach over v5.channel.k8s.io are translated to SPDY streams
// (StreamTranslatorHandler), port-forward's SPDY is tunnelled through the WebSocket
// (TunnelingHandler), and a log is read from the node and written to the WebSocket
// (logOverWebSocket). ok is false for requests left to the plain proxy (SPDY, older
// WebSocket protocols, plain logs).
func (h *Handler) serveWebSocket(w http.ResponseWriter, r *http.Request, nodeName, sub, path string, podQuery url.Values) bool {
	translate := (sub == "exec" || sub == "attach") && wsstream.IsWebSocketRequestWithStreamCloseProtocol(r)
	tunnel := sub == "portforward" && wsstream.IsWebSocketRequestWithTunnelingProtocol(r)
	logs := sub == "log" && wsstream.IsWebSocketRequest(r)
	if !translate && !tunnel && !logs {
		return false
	}
	if h.NodeTransport == nil {
		responsewriters.WriteError(w, apierrors.NewServiceUnavailable("miniapi has no client certificate for the node API"))
		return true
	}
	target, err := h.nodeURL(r.Context(), nodeName)
	if err != nil {
		responsewriters.WriteError(w, err)
		return true
	}
	target.Path, target.RawQuery = path, r.URL.RawQuery
	if logs {
		h.logOverWebSocket(w, r, nodeName, target)
		return true
	}
	w = hijacker(w) // the WebSocket servers assert http.Hijacker instead of unwrapping
	if translate {
		on := func(name string) bool { v := podQuery.Get(name); return v == "true" || v == "1" }
		opts := apiproxy.Options{Stdin: on("stdin"), Stdout: on("stdout"), Stderr: on("stderr"), Tty: on("tty")}
		apiproxy.NewStreamTranslatorHandler(target, h.NodeTransport, 0, opts).ServeHTTP(w, r)
		return true
	}
	r.Header.Del("Authorization") // the node trusts miniapi's certificate, not the user's token
	// The tunnelling writer hands over its connection without a bufio.ReadWriter, which
	// only apimachinery's upgrade-aware proxy (kube-apiserver's) expects.
	upgrade := utilproxy.NewUpgradeAwareHandler(target, h.NodeTransport, false, true, restResponder{})
	apiproxy.NewTunnelingHandler(upgrade).ServeHTTP(w, r)
	return true
}

// logOverWebSocket GETs the log at target from the node and writes it to the WebSocket the
// request asks for (binary.k8s.io, base64.binary.k8s.io or none), as kube-apiserver's
// StreamObject does: the node API serves logs over plain HTTP only. A node error is
// answered before the upgrade, as for a plain GET.
func (h *Handler) logOverWebSocket(w http.ResponseWriter, r *http.Request, nodeName string, target *url.URL) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, target.String(), nil)
	if err != nil {
		responsewriters.WriteError(w, apierrors.NewInternalError(err))
		return
	}
	resp, err := h.NodeTransport.RoundTrip(req)
	if err != nil {
		responsewriters.WriteError(w, logReadError(target, err))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		if err = nodeError(resp); err == nil {
			err = apierrors.NewInternalError(fmt.Errorf("node %s answered %s for the log", nodeName, resp.Status))
		}
		responsewriters.WriteError(w, err)
		return
	}
	body := &errorAfterData{r: resp.Body}
	if err := wsstream.NewReader(body, true, wsstream.NewDefaultReaderProtocols()).Copy(hijacker(w), r); err != nil {
		h.Log.Debug("log over WebSocket ended", "node", nodeName, "err", err)
	}
}

// errorAfterData holds back the error of a read that also returned data until the next
// read: wsstream drops the data of such a read, which the end of a response with a
// Content-Length is.
type errorAfterData struct {
	r   io.Reader
	err error
}

func (e *errorAfterData) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.r.Read(p)
	if n > 0 && err != nil {
		e.err, err = err, nil
	}
	return n, err
}

// hijacker is the innermost of w's wrappers (request metrics, ...) that can hijack the
// connection, or w.
func hijacker(w http.ResponseWriter) http.ResponseWriter {
	for {
		if _, ok := w.(http.Hijacker); ok {
			return w
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

// restResponder answers the upgrade-aware proxy's errors (its "error dialing backend: ..."
// above all) as kube-apiserver's connect responder does: a Status as it is, any other
// error a 500 with its text and no reason.
type restResponder struct{}

func (restResponder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		err = responsewriters.UnknownError(err)
	}
	responsewriters.WriteError(w, err)
}
