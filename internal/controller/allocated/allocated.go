// Package allocated keeps which object holds each value a controller hands out (a
// LoadBalancer address, a node's pod CIDR). The controller reads it back from the objects
// at start, so restarts keep what was handed out, and its one worker owns it, so two
// objects never get the same value while the informer's cache lags behind its writes.
package allocated

// Owners maps each handed-out value to the key of the object holding it.
type Owners[V comparable] map[V]string

// FreeFor says whether v may go to owner: nobody holds it, or owner does already.
func (o Owners[V]) FreeFor(v V, owner string) bool {
	held, taken := o[v]
	return !taken || held == owner
}

// Release frees every value owner holds; false when it held none.
func (o Owners[V]) Release(owner string) bool {
	freed := false
	for v, held := range o {
		if held == owner {
			delete(o, v)
			freed = true
		}
	}
	return freed
}
