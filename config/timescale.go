package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/gswitch/gswitch/units"
)

var (
	durationType = reflect.TypeOf(units.Duration(0))
	rateType     = reflect.TypeOf(units.Rate(0))
)

// applyTimescale puts every fabric value of the decoded config on this
// machine's clock: each units.Duration multiplied by K and each units.Rate
// divided by K, in the switch's keys, the ports' keys and every
// mechanism's config, except the fields tagged `timescale:"wall"`. It
// runs after decoding, so that the defaults the file did not override (a
// port's rtt, a mechanism's rtt) scale as the file's own values do, and before
// validation, so that the bounds are checked on what the machine will run.
func (c *Config) applyTimescale() {
	if c.Timescale.One() {
		return
	}
	scaleFabric(reflect.ValueOf(c).Elem(), c.Timescale)
}

// scaleFabric scales every fabric value under v (addressable) by k. It
// follows pointers, interfaces (a mechanism's config), structs, lists and
// maps; unexported fields and fields tagged `timescale:"wall"` are left
// alone.
func scaleFabric(v reflect.Value, k units.Timescale) {
	switch v.Type() {
	case durationType:
		if v.CanSet() {
			v.SetInt(int64(k.Wall(time.Duration(v.Int()))))
		}
		return
	case rateType:
		if v.CanSet() {
			v.SetUint(k.WallBits(v.Uint()))
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			scaleFabric(v.Elem(), k)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); f.IsExported() && !isWall(f) {
				scaleFabric(v.Field(i), k)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			scaleFabric(v.Index(i), k)
		}
	case reflect.Map:
		if !v.CanSet() {
			return
		}
		for _, key := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(key))
			scaleFabric(e, k)
			v.SetMapIndex(key, e)
		}
	}
}

// isWall says a struct field holds a wall-clock value: a property of this
// machine that the timescale does not change.
func isWall(f reflect.StructField) bool {
	return f.Tag.Get(units.TimescaleTag) == units.WallClock
}

// timescaleFields lists the YAML paths of the Duration and Rate fields
// of a struct type (below prefix): those that scale and those tagged
// wall. Lists are written path[], maps path{}.
func timescaleFields(t reflect.Type, prefix string) (fabric, wall []string) {
	switch t {
	case durationType, rateType:
		return []string{prefix}, nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return timescaleFields(t.Elem(), prefix)
	case reflect.Slice, reflect.Array:
		return timescaleFields(t.Elem(), prefix+"[]")
	case reflect.Map:
		return timescaleFields(t.Elem(), prefix+"{}")
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := yamlKey(f)
			if name == "" {
				name = f.Name
			}
			fa, wa := timescaleFields(f.Type, join(prefix, name))
			if isWall(f) {
				wa, fa = append(wa, fa...), nil
			}
			fabric, wall = append(fabric, fa...), append(wall, wa...)
		}
	}
	return fabric, wall
}

// The bound errors of a scaled switch show both clocks: the file's value,
// the machine's, and what would fix it. At K = 1 the errors are the
// plain ones.

// durationBound is the error of key f whose value on this machine, wall,
// breaks a bound: plain is the error at K = 1, limit says what the bound
// is ("more than the 1s a delay line holds").
func durationBound(k units.Timescale, f, key string, wall units.Duration, plain, limit string) error {
	if k.One() {
		return fmt.Errorf("%s.%s: %s", f, key, plain)
	}
	return fmt.Errorf("%s.%s: %s at timescale %s is %s on this machine, %s (lower timescale or %s)",
		f, key, units.Duration(k.Fabric(wall.D())), k, wall, limit, key)
}

// rateBound is durationBound for a rate.
func rateBound(k units.Timescale, f, key string, wall units.Rate, plain, limit string) error {
	if k.One() {
		return fmt.Errorf("%s.%s: %s", f, key, plain)
	}
	return fmt.Errorf("%s.%s: %s at timescale %s is %s on this machine, %s (lower timescale or raise %s)",
		f, key, units.Rate(k.FabricBits(uint64(wall))), k, wall, limit, key)
}

// mechanismError adds to a mechanism's Validate error, on a scaled
// switch, what the file gave for the key it names (the error starts with
// the key: "hrtt: 2s is longer than 1s"): the mechanism checked the value
// this machine runs, K times the file's time or 1/K its rate. An error
// about a wall key stays as it is; one about a derived value or the port
// says how the timescale moved the values.
func mechanismError(k units.Timescale, cfg any, err error) error {
	if k.One() {
		return err
	}
	key, _, _ := strings.Cut(err.Error(), ":")
	v, f, ok := fieldByKey(cfg, key)
	if ok && isWall(f) {
		return err // the machine's own value, as the file gives it
	}
	if ok && !v.IsZero() {
		switch v.Type() {
		case durationType:
			wall := units.Duration(v.Int())
			return fmt.Errorf("%w (at timescale %s the file's %s: %s is %s on this machine; lower timescale or %s)",
				err, k, key, units.Duration(k.Fabric(wall.D())), wall, key)
		case rateType:
			wall := units.Rate(v.Uint())
			return fmt.Errorf("%w (at timescale %s the file's %s: %s is %s on this machine; lower timescale or raise %s)",
				err, k, key, units.Rate(k.FabricBits(uint64(wall))), wall, key)
		}
	}
	return fmt.Errorf("%w (at timescale %s: this machine runs the file's times x %s and its rates / %s)", err, k, k, k)
}

// fieldByKey finds the field of the struct cfg points to whose YAML key is
// key.
func fieldByKey(cfg any, key string) (reflect.Value, reflect.StructField, bool) {
	v := reflect.ValueOf(cfg)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, reflect.StructField{}, false
	}
	for i := 0; i < v.NumField(); i++ {
		if f := v.Type().Field(i); yamlKey(f) == key {
			return v.Field(i), f, true
		}
	}
	return reflect.Value{}, reflect.StructField{}, false
}
