package all_test

import (
	"testing"

	"github.com/gswitch/gswitch/mech"
	_ "github.com/gswitch/gswitch/mech/all"
)

// TestOrderNamesMechanisms: the mechanisms linked into gswitchd name only
// mechanisms that exist (or the roles) in their order declarations, so a
// misspelt name cannot silently leave a pair unordered; and every pair of
// them that may share a port has an order.
func TestOrderNamesMechanisms(t *testing.T) {
	names := mech.Names()
	for _, n := range names {
		s, _ := mech.Lookup(n)
		for _, o := range append(append([]string(nil), s.After...), s.Before...) {
			if _, ok := mech.Lookup(o); !ok && o != mech.QueueSetter && o != mech.RankSetter {
				t.Errorf("mechanism %s runs before or after %q, which is no mechanism (known: %v)", n, o, names)
			}
		}
	}
	for i, a := range names {
		for _, b := range names[i+1:] {
			if _, err := mech.Order([]string{a, b}); err != nil {
				t.Errorf("%s and %s: %v", a, b, err)
			}
		}
	}
}
