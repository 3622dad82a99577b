package allocated

import "testing"

func TestOwners(t *testing.T) {
	o := Owners[int]{1: "a", 2: "b", 3: "a"}
	if !o.FreeFor(1, "a") || o.FreeFor(1, "b") || !o.FreeFor(4, "b") {
		t.Errorf("FreeFor: a value is free for its holder and for anyone when unheld, not for another: %v", o)
	}
	if !o.Release("a") || len(o) != 1 || o[2] != "b" {
		t.Errorf("Release(a) leaves %v, want only 2: b", o)
	}
	if o.Release("a") {
		t.Error("Release of an owner holding nothing says it freed something")
	}
}
