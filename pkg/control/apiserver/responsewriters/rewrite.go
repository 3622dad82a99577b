package responsewriters

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// jsonRewriter holds back a JSON answer to write it as rewrite makes it; an answer of
// another type passes through as it is written.
type jsonRewriter struct {
	http.ResponseWriter
	rewrite func(body []byte, header http.Header) []byte
	code    int
	held    bool
	body    bytes.Buffer
}

// RewriteJSON is w for a handler whose JSON answer (errors too) is to go as rewrite
// makes it, with the function that writes it once the handler is done: a YAML answer,
// or pretty JSON.
func RewriteJSON(w http.ResponseWriter, rewrite func(body []byte, header http.Header) []byte) (http.ResponseWriter, func()) {
	j := &jsonRewriter{ResponseWriter: w, rewrite: rewrite}
	return j, j.finish
}

func (j *jsonRewriter) WriteHeader(code int) {
	if j.code != 0 {
		return
	}
	j.code = code
	mt, _, _ := mime.ParseMediaType(j.Header().Get("Content-Type"))
	if j.held = mt == runtime.ContentTypeJSON; !j.held {
		j.ResponseWriter.WriteHeader(code)
	}
}

func (j *jsonRewriter) Write(p []byte) (int, error) {
	j.WriteHeader(http.StatusOK)
	if j.held {
		return j.body.Write(p)
	}
	return j.ResponseWriter.Write(p)
}

// Flush passes on what is not held.
func (j *jsonRewriter) Flush() {
	if f, ok := j.ResponseWriter.(http.Flusher); ok && !j.held {
		f.Flush()
	}
}

func (j *jsonRewriter) Unwrap() http.ResponseWriter { return j.ResponseWriter }

func (j *jsonRewriter) finish() {
	if !j.held {
		return
	}
	header := j.Header()
	body := j.rewrite(j.body.Bytes(), header)
	header.Del("Content-Length")
	j.ResponseWriter.WriteHeader(j.code)
	_, _ = j.ResponseWriter.Write(body) // the client going away mid-body is not ours to report
}

// PrettyRequested is kube-apiserver's isPrettyPrint: ?pretty=true, or, without a pretty
// parameter, a client that is a browser, curl or wget. Every request asks it, so the query
// is parsed only when it names pretty at all, as kube's does.
func PrettyRequested(r *http.Request) bool {
	if strings.Contains(r.URL.RawQuery, "pretty") {
		if pp := r.URL.Query().Get("pretty"); pp != "" {
			pretty, _ := strconv.ParseBool(pp)
			return pretty
		}
	}
	ua := r.UserAgent()
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "Wget") || strings.HasPrefix(ua, "Mozilla/5.0")
}

// Indent is a JSON answer as kube-apiserver's pretty serializer writes it: indented by two
// spaces, with no newline at the end.
func Indent(body []byte, _ http.Header) []byte {
	var out bytes.Buffer
	if err := json.Indent(&out, bytes.TrimRight(body, " \t\r\n"), "", "  "); err != nil {
		return body
	}
	return out.Bytes()
}
