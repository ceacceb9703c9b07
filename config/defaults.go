package config

import (
	"time"

	"github.com/gswitch/gswitch/units"
)

// The switch's defaults: every one is set here and nowhere else in the
// package (the scheduler's and the mechanisms' belong to them).
const (
	DefaultSwitchID  = 1
	DefaultFrames    = 32768
	DefaultFrameSize = 2048
	DefaultXDPMode   = "auto"
	DefaultBindMode  = "auto"
	DefaultMetrics   = "127.0.0.1:9100"
	// DefaultSpin is how long an idle worker polls before it sleeps.
	DefaultSpin = 50 * time.Microsecond
	// DefaultCatchUp is the line time a shaped port makes up after its
	// worker ran late (the catchup key).
	DefaultCatchUp  = 5 * time.Millisecond
	DefaultAlpha    = 1.0
	DefaultMACTable = 4096
	DefaultAging    = 300 * time.Second
	DefaultMoveHold = time.Second
	// DefaultBuffer is a port's egress buffer when neither the file nor
	// the port's scheduler (sched.Spec.DefaultBuffer) gives one.
	DefaultBuffer = 1 << 20
	// DefaultRTT is a port's base round-trip time (the rtt key).
	DefaultRTT = 200 * time.Microsecond
)

// Defaults is the config Parse decodes a file over: every key the file
// leaves out keeps the value it has here.
func Defaults() Config {
	return Config{
		SwitchID:  DefaultSwitchID,
		Timescale: 1,
		Frames:    DefaultFrames,
		FrameSize: DefaultFrameSize,
		XDPMode:   DefaultXDPMode,
		BindMode:  DefaultBindMode,
		Spin:      units.Duration(DefaultSpin),
		CatchUp:   units.Duration(DefaultCatchUp),
		Alpha:     DefaultAlpha,
		MACTable:  MACTable{Size: DefaultMACTable, Aging: units.Duration(DefaultAging), MoveHold: units.Duration(DefaultMoveHold)},
		Metrics:   DefaultMetrics,
		Control:   Control{CaptureMemory: DefaultCaptureMemory},
	}
}

// defaults gives a port, before its keys are decoded, the defaults of the
// keys whose 0 means 0 (rtt: 0 is no round-trip time); the others (name,
// scheduler, queues, quantum, buffer) depend on other keys and are filled
// in by validation.
func (p *Port) defaults() {
	p.RTT = units.Duration(DefaultRTT)
}

// zeroMeansDefault puts back the defaults of the keys that document 0 or
// "" as "the default" (frames: 0, xdp_mode: "").
func (c *Config) zeroMeansDefault() {
	d := Defaults()
	orDefault(&c.SwitchID, d.SwitchID)
	orDefault(&c.Frames, d.Frames)
	orDefault(&c.FrameSize, d.FrameSize)
	orDefault(&c.XDPMode, d.XDPMode)
	orDefault(&c.BindMode, d.BindMode)
	orDefault(&c.Metrics, d.Metrics)
	orDefault(&c.MACTable.Size, d.MACTable.Size)
}

func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}
