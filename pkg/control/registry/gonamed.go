package registry

import (
	"encoding/json"
	"reflect"
	"strings"
)

// GoNamed is a value as kube-apiserver prints it in a field error when the value is (part
// of) one of its internal types: those have no JSON tags, so every field shows under its Go
// name, none omitted, an unset pointer or slice as null. It fits an API type whose
// internal twin has the same fields in the same order (flowcontrol's, a PDB's spec); a
// value of a type the internal and API types share (apimachinery's: a label selector)
// prints its JSON, as it does there.
type GoNamed struct{ V any }

// MarshalJSON writes V with Go field names.
func (g GoNamed) MarshalJSON() ([]byte, error) { return appendGoNamed(nil, reflect.ValueOf(g.V)) }

var marshalerType = reflect.TypeFor[json.Marshaler]()

func appendGoNamed(b []byte, v reflect.Value) ([]byte, error) {
	switch {
	case !v.IsValid():
		return append(b, "null"...), nil
	case v.Type().Implements(marshalerType) && !(v.Kind() == reflect.Pointer && v.IsNil()):
		return appendJSON(b, v.Interface()) // quantities, times and the like print themselves
	case v.Kind() == reflect.Struct && strings.HasPrefix(v.Type().PkgPath(), "k8s.io/apimachinery/"):
		return appendJSON(b, v.Interface())
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return append(b, "null"...), nil
		}
		return appendGoNamed(b, v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i := range v.Len() {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendGoNamed(b, v.Index(i)); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case reflect.Struct:
		b = append(b, '{')
		first := true
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b, _ = appendJSON(b, f.Name)
			b = append(b, ':')
			var err error
			if b, err = appendGoNamed(b, v.Field(i)); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	return appendJSON(b, v.Interface())
}

func appendJSON(b []byte, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	return append(b, data...), err
}
