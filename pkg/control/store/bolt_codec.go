package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// On-disk layout of the bolt engine:
//   objects: key -> 8-byte big-endian mod revision + value
//   events:  8-byte big-endian revision -> encodeEvent
//   meta:    "revision" and "compacted" -> 8-byte big-endian revisions

var (
	bucketObjects = []byte("objects")
	bucketEvents  = []byte("events")
	bucketMeta    = []byte("meta")
	metaRevision  = []byte("revision")
	metaCompacted = []byte("compacted")
)

var errCorruptRecord = errors.New("corrupt record")

func revisionKey(rev int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(rev)) }

func decodeRevision(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("revision of %d bytes: %w", len(b), errCorruptRecord)
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

func encodeObject(rev int64, value []byte) []byte {
	return append(binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(value)), uint64(rev)), value...)
}

// decodeObject copies the value out of bolt's memory, which is only valid inside the transaction.
func decodeObject(key string, b []byte) (KV, error) {
	if len(b) < 8 {
		return KV{}, fmt.Errorf("object %q of %d bytes: %w", key, len(b), errCorruptRecord)
	}
	return KV{Key: key, Revision: int64(binary.BigEndian.Uint64(b)), Value: bytes.Clone(b[8:])}, nil
}

// encodeEvent: type byte (the type's first letter), then length-prefixed key and value, and for Modified the previous
// value (for Deleted the previous value is the value itself, for Added there is none).
func encodeEvent(ev Event) []byte {
	b := make([]byte, 0, 1+3*binary.MaxVarintLen64+len(ev.Key)+len(ev.Value)+len(ev.PrevValue))
	b = append(b, ev.Type[0])
	b = appendBytes(b, []byte(ev.Key))
	b = appendBytes(b, ev.Value)
	if ev.Type == Modified {
		b = appendBytes(b, ev.PrevValue)
	}
	return b
}

func appendBytes(b, field []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(field))), field...)
}

// eventKey reads only the key of an encoded event, so history scans skip other prefixes cheaply.
func eventKey(b []byte) (string, error) {
	if len(b) < 1 {
		return "", errCorruptRecord
	}
	key, _, err := readBytes(b[1:])
	return string(key), err
}

func decodeEvent(rev int64, b []byte) (Event, error) {
	if len(b) < 1 {
		return Event{}, fmt.Errorf("event %d: %w", rev, errCorruptRecord)
	}
	ev := Event{Revision: rev}
	switch b[0] {
	case Added[0]:
		ev.Type = Added
	case Modified[0]:
		ev.Type = Modified
	case Deleted[0]:
		ev.Type = Deleted
	}
	key, rest, err := readBytes(b[1:])
	if err != nil || ev.Type == "" {
		return Event{}, fmt.Errorf("event %d: %w", rev, errCorruptRecord)
	}
	ev.Key = string(key)
	value, rest, err := readBytes(rest)
	if err != nil {
		return Event{}, fmt.Errorf("event %d: %w", rev, err)
	}
	ev.Value = bytes.Clone(value)
	switch ev.Type {
	case Modified:
		prev, _, err := readBytes(rest)
		if err != nil {
			return Event{}, fmt.Errorf("event %d: %w", rev, err)
		}
		ev.PrevValue = bytes.Clone(prev)
	case Deleted:
		ev.PrevValue = ev.Value
	}
	return ev, nil
}

func readBytes(b []byte) (field, rest []byte, err error) {
	n, size := binary.Uvarint(b)
	if size <= 0 || uint64(len(b)-size) < n {
		return nil, nil, errCorruptRecord
	}
	return b[size : size+int(n)], b[size+int(n):], nil
}
