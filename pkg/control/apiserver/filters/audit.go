package filters

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/minik8s/minik8s/pkg/control/apiserver/authn"
	"gopkg.in/natefinch/lumberjack.v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/request"
	pluginlog "k8s.io/apiserver/plugin/pkg/audit/log"
	"k8s.io/client-go/kubernetes/scheme"
)

// AuditOptions are kube-apiserver's audit log flags.
type AuditOptions struct {
	LogPath    string // --audit-log-path: a file, or "-" for standard output ("": no audit)
	PolicyFile string // --audit-policy-file: an audit.k8s.io/v1 Policy
	// MaxSize (MB), MaxBackups and MaxAge (days) rotate the file, as lumberjack does
	// for kube-apiserver (--audit-log-maxsize, -maxbackup, -maxage; 0: no limit).
	MaxSize, MaxBackups, MaxAge int
}

// Auditor writes an audit.k8s.io/v1 Event per stage of each request its policy selects,
// as JSON lines, with k8s.io/apiserver's policy evaluator, log backend and WithAudit filter.
type Auditor struct {
	policy audit.PolicyRuleEvaluator
	sink   audit.Sink
	out    io.Closer
}

// NewAuditor opens the log and reads the policy. As in kube-apiserver, auditing needs both
// a log path and a policy: without either it is off (nil Auditor, no error).
func NewAuditor(o AuditOptions) (*Auditor, error) {
	if o.LogPath == "" || o.PolicyFile == "" {
		return nil, nil
	}
	if o.MaxSize < 0 || o.MaxBackups < 0 || o.MaxAge < 0 {
		return nil, fmt.Errorf("--audit-log-maxsize %d, --audit-log-maxbackup %d and --audit-log-maxage %d must not be negative", o.MaxSize, o.MaxBackups, o.MaxAge)
	}
	p, err := policy.LoadPolicyFromFile(o.PolicyFile)
	if err != nil {
		return nil, fmt.Errorf("--audit-policy-file: %w", err)
	}
	var w io.Writer = os.Stdout
	var closer io.Closer = io.NopCloser(nil)
	if o.LogPath != "-" {
		// Created 0600 in a 0700 directory before lumberjack opens it, as kube-apiserver does.
		if err := os.MkdirAll(filepath.Dir(o.LogPath), 0o700); err != nil {
			return nil, fmt.Errorf("--audit-log-path: %w", err)
		}
		f, err := os.OpenFile(o.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("--audit-log-path: %w", err)
		}
		_ = f.Close()
		l := &lumberjack.Logger{Filename: o.LogPath, MaxSize: o.MaxSize, MaxBackups: o.MaxBackups, MaxAge: o.MaxAge}
		w, closer = l, l
	}
	backend := pluginlog.NewBackend(w, pluginlog.FormatJson, auditv1.SchemeGroupVersion)
	return &Auditor{policy: policy.NewPolicyRuleEvaluator(p), sink: ignoreErrors{backend}, out: closer}, nil
}

// ignoreErrors is kube-apiserver's default "blocking" mode: an event is written before the
// request goes on, and a failed write (logged by the backend) does not fail the request.
type ignoreErrors struct{ audit.Backend }

func (b ignoreErrors) ProcessEvents(events ...*auditinternal.Event) bool {
	b.Backend.ProcessEvents(events...)
	return true
}

// Close closes the log file.
func (a *Auditor) Close() error {
	if a == nil {
		return nil
	}
	return a.out.Close()
}

// Handler audits the requests to next. It goes after authentication (the event's user is the
// authenticated one) and before Authorize (which adds the impersonated user and the
// authorization decision). A nil Auditor returns next.
func (a *Auditor) Handler(next http.Handler) http.Handler {
	if a == nil {
		return next
	}
	audited := genericfilters.WithAudit(answerTimedOut(next), a.sink, a.policy, longRunningRequest)
	// WithAudit reads the user and the request info (WithRequestInfo's) from k8s.io/apiserver's context keys.
	withUser := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if u, ok := authn.UserFrom(ctx); ok {
			ctx = request.WithUser(ctx, u.Info())
		} else { // authn.Authenticate let an anonymous request through: Kubernetes' anonymous user
			ctx = request.WithUser(ctx, &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}})
		}
		audited.ServeHTTP(streamingWriter{w, ctx.Done()}, r.WithContext(ctx))
	})
	return WithRequestInfo(genericfilters.WithAuditInit(withUser))
}

// streamingWriter is what WithAudit's response writer needs below it to pass on Flush
// (watches) and Hijack (exec, attach, port-forward upgrades): a writer with both and with
// CloseNotify, which our filters' writers reach through http.ResponseController instead.
type streamingWriter struct {
	http.ResponseWriter
	done <-chan struct{}
}

func (s streamingWriter) Flush() { _ = http.NewResponseController(s.ResponseWriter).Flush() }

func (s streamingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(s.ResponseWriter).Hijack()
}

// CloseNotify (deprecated, asked for by the wrapper's type only) fires when the request ends.
func (s streamingWriter) CloseNotify() <-chan bool {
	ch := make(chan bool, 1)
	go func() {
		<-s.done
		ch <- true
	}()
	return ch
}

func (s streamingWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Auditing tells whether the request's audit event records anything.
func Auditing(ctx context.Context) bool { return audit.AuditContextFrom(ctx).Enabled() }

// auditAuthorization records the authorization decision as kube-apiserver's annotations.
func auditAuthorization(ctx context.Context, d authorizer.Decision, reason string) {
	if !Auditing(ctx) {
		return
	}
	decision := "forbid"
	if d == authorizer.DecisionAllow {
		decision = "allow"
	}
	audit.AddAuditAnnotations(ctx, "authorization.k8s.io/decision", decision, "authorization.k8s.io/reason", reason)
}

// auditImpersonation records who the request runs as.
func auditImpersonation(ctx context.Context, as authn.User) {
	if Auditing(ctx) {
		audit.LogImpersonatedUser(ctx, as.Info(), "")
	}
}

// auditCodecs encode the objects of Request and RequestResponse events.
var auditCodecs = scheme.Codecs.WithoutConversion()

// AuditRequestObject records a decoded request body (and the object's name and uid, at
// Metadata level too, as kube-apiserver does).
func AuditRequestObject(ctx context.Context, obj runtime.Object, gvk schema.GroupVersionKind) {
	if !Auditing(ctx) {
		return
	}
	if gvk.Empty() {
		gvk = obj.GetObjectKind().GroupVersionKind()
	}
	audit.LogRequestObject(ctx, obj, gvk.GroupVersion(), gvk.GroupVersion().WithResource(""), "", auditCodecs)
}

// AuditRequestPatch records a patch body.
func AuditRequestPatch(ctx context.Context, patch []byte) {
	if Auditing(ctx) {
		audit.LogRequestPatch(ctx, patch)
	}
}

// AuditResponse records the object answered (RequestResponse level).
func AuditResponse(ctx context.Context, obj runtime.Object, gv schema.GroupVersion) {
	if Auditing(ctx) {
		audit.LogResponseObject(ctx, obj, gv, auditCodecs)
	}
}

// AuditError records the Status an error is answered with.
func AuditError(ctx context.Context, err error) {
	if !Auditing(ctx) {
		return
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		status = apierrors.NewInternalError(err)
	}
	st := status.Status()
	audit.LogResponseObject(ctx, &st, metav1.SchemeGroupVersion, auditCodecs)
}
