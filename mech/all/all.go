// Package all links every mechanism into a program: import it for its side
// effects (gswitchd, the config checker, tests). Adding a mechanism to
// gswitch is one line here.
package all

import (
	_ "github.com/gswitch/gswitch/mech/afq"
	_ "github.com/gswitch/gswitch/mech/bfc"
	_ "github.com/gswitch/gswitch/mech/ecn"
	_ "github.com/gswitch/gswitch/mech/expresspass"
	_ "github.com/gswitch/gswitch/mech/pfabric"
	_ "github.com/gswitch/gswitch/mech/pfc"
	_ "github.com/gswitch/gswitch/mech/sfc"
	_ "github.com/gswitch/gswitch/mech/telemetry"
)
