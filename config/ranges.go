package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// A number key's bounds are written on its field, where the key is
// declared:
//
//	BufferPackets int `yaml:"buffer_packets" range:"0,4194304" hint:"0 = min(buffer/128, 8192)"`
//
// and checked where the key is decoded (the error names the key, its line,
// the value, the bounds and the hint) and, for a config built in Go, by
// Complete. A key with bounds of its own then needs its declaration, its
// consumer and its line in configs/reference.yaml, nothing else. The
// mechanisms' config structs take the same tags.

// rangeTag reads field f's bounds, if it has them.
func rangeTag(f reflect.StructField) (lo, hi float64, ok bool) {
	t := f.Tag.Get("range")
	if t == "" {
		return 0, 0, false
	}
	a, b, found := strings.Cut(t, ",")
	lo, err1 := strconv.ParseFloat(a, 64)
	hi, err2 := strconv.ParseFloat(b, 64)
	if !found || err1 != nil || err2 != nil || lo > hi {
		panic(fmt.Sprintf("config: field %s: range tag %q is not \"lo,hi\"", f.Name, t))
	}
	return lo, hi, true
}

// outOfRange says why v (field f's value) is out of its bounds, or "".
func outOfRange(f reflect.StructField, v reflect.Value) string {
	lo, hi, ok := rangeTag(f)
	if !ok {
		return ""
	}
	var x float64
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x = float64(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		x = float64(v.Uint())
	case reflect.Float32, reflect.Float64:
		x = v.Float()
	default:
		panic(fmt.Sprintf("config: field %s: a range tag on a %s", f.Name, v.Kind()))
	}
	if x >= lo && x <= hi {
		return ""
	}
	msg := fmt.Sprintf("%s out of range [%s, %s]", strconv.FormatFloat(x, 'g', -1, 64), strconv.FormatFloat(lo, 'f', -1, 64), strconv.FormatFloat(hi, 'f', -1, 64))
	if h := f.Tag.Get("hint"); h != "" {
		msg += " (" + h + ")"
	}
	return msg
}

// checkRanges checks every bounded number field of the struct v and of the
// structs it holds (ports, mechanisms' configs), naming each by its path
// (the keys' bounds of a config built in Go; Parse checks them as it
// decodes, with their lines).
func checkRanges(v reflect.Value, path string) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return checkRanges(v.Elem(), path)
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if err := checkRanges(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			p := join(path, yamlKey(f))
			if m := outOfRange(f, v.Field(i)); m != "" {
				return fmt.Errorf("%s: %s", p, m)
			}
			if k := f.Type.Kind(); k == reflect.Struct || k == reflect.Slice || k == reflect.Pointer || k == reflect.Interface {
				if err := checkRanges(v.Field(i), p); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
