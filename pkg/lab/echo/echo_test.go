package echo

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHandlerEchoesTheCaller(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/any/path")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "127.0.0.1\n" {
		t.Fatalf("got %q, want the caller's address 127.0.0.1", body)
	}
}
