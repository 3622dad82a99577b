package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// crdConversionWebhookCommand is the conversion webhook of the CustomResourceConversionWebhook
// tests, as agnhost crd-conversion-webhook: HTTPS with the given key pair, /crdconvert
// converting the suite's custom resource (stable.example.com, v1 `hostPort` and v2 `host`
// and `port`) in ConversionReviews v1 and v1beta1, /readyz for the readiness probe.
func crdConversionWebhookCommand() *cobra.Command {
	var certFile, keyFile string
	port, verbosity := 443, 0
	cmd := &cobra.Command{
		Use:   "crd-conversion-webhook",
		Short: "Serves the conversion webhook of the e2e suite's custom resource on /crdconvert (HTTPS)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pair, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return fmt.Errorf("--tls-cert-file, --tls-private-key-file: %w", err)
			}
			mux := http.NewServeMux()
			mux.Handle("/crdconvert", conversionHandler{verbose: verbosity >= 2})
			mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
			srv := &http.Server{Addr: fmt.Sprintf(":%d", port), Handler: mux,
				TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair}}}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
			defer stop()
			if err := srv.ListenAndServeTLS("", ""); err != http.ErrServerClosed {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&certFile, "tls-cert-file", "", "file of the x509 certificate for HTTPS (a CA certificate, if any, after it)")
	cmd.Flags().StringVar(&keyFile, "tls-private-key-file", "", "file of the x509 private key matching --tls-cert-file")
	cmd.Flags().IntVar(&port, "port", port, "secure port the webhook listens on")
	cmd.Flags().IntVarP(&verbosity, "v", "v", verbosity, "log level: 2 and above log each request and response")
	return cmd
}

// conversionReviews decodes ConversionReviews of apiextensions.k8s.io v1 and v1beta1, in
// JSON or YAML.
var conversionReviews = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1beta1.AddToScheme(scheme))
	return serializer.NewCodecFactory(scheme).UniversalDeserializer()
}()

type conversionHandler struct{ verbose bool }

// ServeHTTP answers a ConversionReview in its own version: every object converted, or
// the first failure's message, as upstream's converter framework answers.
func (h conversionHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if h.verbose {
		log.Printf("handling request: %s", body)
	}
	obj, _, err := conversionReviews.Decode(body, nil, nil)
	if err != nil {
		http.Error(w, fmt.Sprintf("failed to deserialize body (%s) with error %v", body, err), http.StatusBadRequest)
		return
	}
	switch review := obj.(type) {
	case *apiextensionsv1.ConversionReview:
		review.Response, err = convertReview(review.Request)
		review.Request = &apiextensionsv1.ConversionRequest{}
	case *apiextensionsv1beta1.ConversionReview:
		// v1beta1's request and response have v1's fields, so they convert as Go types.
		var response *apiextensionsv1.ConversionResponse
		response, err = convertReview((*apiextensionsv1.ConversionRequest)(review.Request))
		review.Response = (*apiextensionsv1beta1.ConversionResponse)(response)
		review.Request = &apiextensionsv1beta1.ConversionRequest{}
	default:
		err = fmt.Errorf("unsupported kind %T", obj)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := json.Marshal(obj)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if h.verbose {
		log.Printf("sending response: %s", out)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// convertReview answers a ConversionReview's request.
func convertReview(request *apiextensionsv1.ConversionRequest) (*apiextensionsv1.ConversionResponse, error) {
	if request == nil {
		return nil, errors.New("a ConversionReview without a request")
	}
	converted, status := convertAll(request.Objects, request.DesiredAPIVersion)
	return &apiextensionsv1.ConversionResponse{UID: request.UID, ConvertedObjects: converted, Result: status}, nil
}

// convertAll converts each object to apiVersion; the first that fails fails them all.
func convertAll(objects []runtime.RawExtension, apiVersion string) ([]runtime.RawExtension, metav1.Status) {
	var out []runtime.RawExtension
	for _, raw := range objects {
		cr := &unstructured.Unstructured{}
		if err := cr.UnmarshalJSON(raw.Raw); err != nil {
			return nil, failure("failed to unmarshall object (%s) with error: %v", raw.Raw, err)
		}
		if err := convertHostPort(cr, apiVersion); err != nil {
			log.Print(err)
			return nil, failure("%s", err)
		}
		data, err := cr.MarshalJSON()
		if err != nil {
			return nil, failure("failed to marshal object %s: %v", cr.GetName(), err)
		}
		out = append(out, runtime.RawExtension{Raw: data})
	}
	return out, metav1.Status{Status: metav1.StatusSuccess}
}

func failure(format string, args ...any) metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Message: fmt.Sprintf(format, args...)}
}

// convertHostPort converts the suite's custom resource in place: v1's `hostPort`
// ("host:port") is v2's `host` and `port`. Converting to the version an object already has
// is refused: the API server must not ask for it.
func convertHostPort(cr *unstructured.Unstructured, to string) error {
	const v1, v2 = "stable.example.com/v1", "stable.example.com/v2"
	from := cr.GetAPIVersion()
	if from == to {
		return fmt.Errorf("conversion from a version to itself should not call the webhook: %s", to)
	}
	switch {
	case from == v1 && to == v2:
		if hostPort, ok := cr.Object["hostPort"]; ok {
			s, _ := hostPort.(string)
			host, port, found := strings.Cut(s, ":")
			if !found || strings.Contains(port, ":") {
				return fmt.Errorf("invalid hostPort value `%v`", hostPort)
			}
			delete(cr.Object, "hostPort")
			cr.Object["host"], cr.Object["port"] = host, port
		}
	case from == v2 && to == v1:
		host, hasHost := cr.Object["host"]
		port, hasPort := cr.Object["port"]
		if hasHost || hasPort {
			if !hasHost {
				host = ""
			}
			if !hasPort {
				port = ""
			}
			cr.Object["hostPort"] = fmt.Sprintf("%s:%s", host, port)
			delete(cr.Object, "host")
			delete(cr.Object, "port")
		}
	case from == v1 || from == v2:
		return fmt.Errorf("unexpected conversion version %q", to)
	default:
		return fmt.Errorf("unexpected conversion version %q", from)
	}
	cr.SetAPIVersion(to)
	return nil
}
