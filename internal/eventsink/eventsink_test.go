package eventsink

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestWriteEndsWithTheContext: an Event write to an API server that does not answer
// returns once the sink's context ends (client-go's EventSinkImpl waited on).
func TestWriteEndsWithTheContext(t *testing.T) {
	received := make(chan struct{}, 1)
	release := make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer server.Close()
	defer close(release)
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: server.URL})

	ctx, cancel := context.WithCancel(context.Background())
	s := New(ctx, client.CoreV1())
	done := make(chan error, 1)
	go func() {
		_, err := s.Create(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "e"}})
		done <- err
	}()
	<-received
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the write cut short reported success")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the Event write went on after its context ended")
	}
}
