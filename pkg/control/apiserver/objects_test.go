package apiserver

import "testing"

func TestWithResourceVersion(t *testing.T) {
	for in, want := range map[string]string{
		`{"kind":"Pod","metadata":{"name":"a"},"spec":{}}`: `{"kind":"Pod","metadata":{"resourceVersion":"42","name":"a"},"spec":{}}`,
		`{"metadata":{}}`: `{"metadata":{"resourceVersion":"42"}}`,
		`{ "spec": {"metadata": {"x": 1}}, "metadata" : { "n": 1 } }`: `{ "spec": {"metadata": {"x": 1}}, "metadata" : {"resourceVersion":"42", "n": 1 } }`,
		`{"kind":"Pod"}`:                     "",
		`{"metadata":"a"}`:                   "",
		`{"metadata":{"name":"a"}`:           "",
		`["metadata",{}]`:                    "",
		`{"kind":"Pod","metadata":{"a":1}}x`: "",
	} {
		got, ok := withResourceVersion([]byte(in), 42)
		if ok != (want != "") || string(got) != want {
			t.Errorf("withResourceVersion(%s) = %s, %v; want %s", in, got, ok, want)
		}
	}
}
