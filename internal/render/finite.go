package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// ErrEncoding is wrapped when a report could not be encoded in the format asked for.
var ErrEncoding = errors.New("the report could not be encoded")

// writeMachine writes any report as indented JSON or as YAML. Numbers JSON cannot hold (NaN,
// ±Inf) are written as null, and the report's warnings say where each was: a report is never
// lost to its encoding.
func writeMachine(w io.Writer, format string, v any) error {
	var b []byte
	var err error
	switch format {
	case "json":
		b, err = encodeJSON(v)
	case "yaml":
		if b, err = encodeJSON(v); err == nil {
			if b, err = yaml.JSONToYAML(escapeForYAML(b)); err != nil {
				err = fmt.Errorf("%w as YAML: %w", ErrEncoding, err)
			}
		}
	default:
		return fmt.Errorf("unknown output format %q (want json or yaml)", format)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// writeMachineOrText writes v as JSON or YAML; should that fail, it writes the report as text
// (with text) rather than lose it, and says so.
func writeMachineOrText(w io.Writer, format string, v any, text func(io.Writer) error) error {
	var buf bytes.Buffer
	err := writeMachine(&buf, format, v)
	if err == nil {
		_, err = w.Write(buf.Bytes())
		return err
	}
	if !errors.Is(err, ErrEncoding) {
		return err
	}
	if terr := text(w); terr != nil {
		return fmt.Errorf("%w; and as text: %w", err, terr)
	}
	return fmt.Errorf("%w: written as text instead", err)
}

// encodeJSON encodes v as indented JSON, with null for every NaN or infinite number.
func encodeJSON(v any) ([]byte, error) {
	b, err := indentJSON(v)
	var ue *json.UnsupportedValueError
	if err == nil || !errors.As(err, &ue) {
		return b, wrapEncoding(err)
	}
	marked, where := withNullMarks(v)
	if b, err = indentJSON(marked); err != nil {
		return nil, wrapEncoding(err)
	}
	if len(where) == 0 {
		return b, nil
	}
	for _, mark := range [][]byte{nullMark64JSON, nullMark32JSON} {
		b = bytes.ReplaceAll(b, mark, []byte("null"))
	}
	return b, nil
}

// escapeForYAML escapes, in JSON, the characters JSON writes as they are but YAML's reader
// refuses (DEL, the C1 controls, U+FFFE, U+FFFF): they can only be inside strings.
func escapeForYAML(js []byte) []byte {
	var out []byte
	for i := 0; i < len(js); {
		r, n := utf8.DecodeRune(js[i:])
		if r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0xfffe || r == 0xffff {
			if out == nil {
				out = append(make([]byte, 0, len(js)+16), js[:i]...)
			}
			out = fmt.Appendf(out, `\u%04x`, r)
		} else if out != nil {
			out = append(out, js[i:i+n]...)
		}
		i += n
	}
	if out == nil {
		return js
	}
	return out
}

func wrapEncoding(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w as JSON: %w", ErrEncoding, err)
}

func indentJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	err := enc.Encode(v)
	return buf.Bytes(), err
}

// The marks stand in for NaN and infinite numbers until the JSON is written, then become null:
// values no figure has.
const (
	nullMark64 = -1.2345678901234567e308
	nullMark32 = float32(-1.2345678e38)
)

var nullMark64JSON, nullMark32JSON = mustJSON(nullMark64), mustJSON(nullMark32)

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// maxNullWarnings bounds the warnings that name the numbers written as null.
const maxNullWarnings = 20

// withNullMarks is a copy of v with every NaN or infinite number replaced by a mark, the
// report's warnings (a top-level Warnings list, where it has one) naming where each was.
func withNullMarks(v any) (any, []string) {
	var where []string
	out := markCopy(reflect.ValueOf(v), "", &where, 0)
	if len(where) == 0 || !out.IsValid() {
		return v, nil
	}
	slices.Sort(where)
	msgs := where
	if len(msgs) > maxNullWarnings {
		msgs = append(slices.Clone(msgs[:maxNullWarnings]), fmt.Sprintf("and %d more numbers that were NaN or infinite: written as null", len(where)-maxNullWarnings))
	}
	addWarnings(out, msgs)
	return out.Interface(), where
}

// maxMarkDepth bounds how deep markCopy goes (reports are a few levels deep).
const maxMarkDepth = 64

// markCopy copies v, replacing NaN and infinite numbers with marks and noting their JSON paths
// in where. Parts that cannot hold a number are shared with v, not copied.
func markCopy(v reflect.Value, path string, where *[]string, depth int) reflect.Value {
	if !v.IsValid() || depth > maxMarkDepth || !mayHoldFloat(v.Type()) {
		return v
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		return markFloat(v, path, where)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return v
		}
		inner := markCopy(v.Elem(), path, where, depth+1)
		if v.Kind() == reflect.Interface {
			out := reflect.New(v.Type()).Elem()
			out.Set(inner)
			return out
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(inner)
		return out
	case reflect.Struct:
		return markStruct(v, path, where, depth)
	case reflect.Slice, reflect.Array:
		return markList(v, path, where, depth)
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(it.Key(), markCopy(it.Value(), joinPath(path, fmt.Sprint(it.Key().Interface())), where, depth+1))
		}
		return out
	}
	return v
}

func markFloat(v reflect.Value, path string, where *[]string) reflect.Value {
	f := v.Float()
	if !math.IsNaN(f) && !math.IsInf(f, 0) {
		return v
	}
	if path == "" {
		path = "the value"
	}
	*where = append(*where, fmt.Sprintf("%s was %v: written as null", path, f))
	out := reflect.New(v.Type()).Elem()
	if v.Kind() == reflect.Float32 {
		out.SetFloat(float64(nullMark32))
	} else {
		out.SetFloat(nullMark64)
	}
	return out
}

func markStruct(v reflect.Value, path string, where *[]string, depth int) reflect.Value {
	out := reflect.New(v.Type()).Elem()
	out.Set(v)
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, ok := jsonName(sf)
		if !ok || !sf.IsExported() {
			continue
		}
		p := path
		if name != "" {
			p = joinPath(path, name)
		}
		out.Field(i).Set(markCopy(v.Field(i), p, where, depth+1))
	}
	return out
}

func markList(v reflect.Value, path string, where *[]string, depth int) reflect.Value {
	var out reflect.Value
	if v.Kind() == reflect.Slice {
		if v.IsNil() {
			return v
		}
		out = reflect.MakeSlice(v.Type(), v.Len(), v.Len())
	} else {
		out = reflect.New(v.Type()).Elem()
	}
	for i := 0; i < v.Len(); i++ {
		out.Index(i).Set(markCopy(v.Index(i), fmt.Sprintf("%s[%d]", path, i), where, depth+1))
	}
	return out
}

// jsonName is a field's name in JSON ("" for an embedded struct JSON inlines); false for a
// field JSON leaves out.
func jsonName(sf reflect.StructField) (string, bool) {
	tag := sf.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" && !sf.Anonymous {
		name = sf.Name
	}
	return name, true
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// addWarnings appends msgs to v's top-level Warnings list of strings, where it has one.
func addWarnings(v reflect.Value, msgs []string) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return
	}
	f := v.FieldByName("Warnings")
	if !f.IsValid() || !f.CanSet() || f.Type() != reflect.TypeOf([]string(nil)) {
		return
	}
	f.Set(reflect.ValueOf(append(slices.Clone(f.Interface().([]string)), msgs...)))
}

// floatTypes caches, per type, whether a value of it may hold a float that JSON writes.
var floatTypes sync.Map

func mayHoldFloat(t reflect.Type) bool {
	if v, ok := floatTypes.Load(t); ok {
		return v.(bool)
	}
	r := holdsFloat(t, map[reflect.Type]bool{})
	floatTypes.Store(t, r)
	return r
}

func holdsFloat(t reflect.Type, seen map[reflect.Type]bool) bool {
	if r, ok := seen[t]; ok {
		return r
	}
	seen[t] = false // a type that holds itself: decided by its other parts
	r := false
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Interface:
		r = true
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		r = holdsFloat(t.Elem(), seen)
	case reflect.Struct:
		for i := 0; i < t.NumField() && !r; i++ {
			r = t.Field(i).IsExported() && holdsFloat(t.Field(i).Type, seen)
		}
	}
	seen[t] = r
	return r
}
