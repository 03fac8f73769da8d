package cloudflare

import (
	"fmt"
	"net/http"
	"reflect"
)

// sameFields returns the request of type Dst with every field of src: the
// SDK declares the create and the update request of an object as two
// structs with the same fields (the update may have more, and a type field
// may be another named string type), so the adapter builds one and copies
// it into the other. A field of src that Dst lacks, or holds in a type it
// cannot be converted to, is a programming error and panics; the tests send
// every request.
func sameFields[Dst, Src any](src Src) Dst {
	var dst Dst
	copyFields(reflect.ValueOf(&dst).Elem(), reflect.ValueOf(src), reflect.TypeFor[Src]().Name())
	return dst
}

// copyFields copies src into dst: as it is when the types are the same, by
// conversion between two named types of one scalar kind, else field by
// field (by name) between two structs. path names src in a panic.
func copyFields(dst, src reflect.Value, path string) {
	switch {
	case src.Type() == dst.Type():
		dst.Set(src)
	case src.Kind() == dst.Kind() && src.Kind() != reflect.Struct && src.Type().ConvertibleTo(dst.Type()):
		dst.Set(src.Convert(dst.Type()))
	case src.Kind() == reflect.Struct && dst.Kind() == reflect.Struct:
		for i := range src.NumField() {
			f := src.Type().Field(i)
			d := dst.FieldByName(f.Name)
			if !d.IsValid() {
				panic(fmt.Sprintf("cloudflare: %s.%s has no field of that name in %s", path, f.Name, dst.Type()))
			}
			copyFields(d, src.Field(i), path+"."+f.Name)
		}
	default:
		panic(fmt.Sprintf("cloudflare: %s (%s) cannot be copied into %s", path, src.Type(), dst.Type()))
	}
}

// lbObject is a Load Balancing object as the adapter models it.
type lbObject interface{ objectID() string }

func (m Monitor) objectID() string       { return m.ID }
func (p Pool) objectID() string          { return p.ID }
func (lb LoadBalancer) objectID() string { return lb.ID }

// written returns the object a create or an update answered with (from
// turns the SDK's into ours): a refusal as an *APIError, a success answer
// without the object or its id as errNoResult naming call.
func written[R any, T lbObject](res *R, err error, raw *http.Response, from func(*R) T, call string) (T, error) {
	var zero T
	if err != nil {
		return zero, apiError(err, raw)
	}
	if res == nil {
		return zero, noResult(call)
	}
	out := from(res)
	if out.objectID() == "" {
		return zero, noResult(call)
	}
	return out, nil
}
