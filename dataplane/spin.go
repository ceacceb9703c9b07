package dataplane

// Adaptive spinning. A worker that found nothing to do may poll a while
// (Config.Spin, the spin key) before it sleeps in ppoll: if a frame comes
// within that time, it saves a wake-up, which costs microseconds on bare
// metal and tens of microseconds in some virtual machines (docs/results.md,
// Latency at low load). If frames come further apart than Config.Spin,
// every spin is a CPU burnt for nothing: at 100 Mbit/s of full frames (one
// every 123 µs) a 50 µs spin after each frame keeps a worker busy 40% of
// the time, and several switches sharing two CPUs with their hosts starve
// them.
//
// So, as NAPI and DPDK's power management do, the worker keeps score of
// whether spinning pays: a spin that ended in work (or a sleep that work
// ended within Config.Spin, so that a spin would have caught it) is a hit;
// a sleep longer than Config.Spin is a miss. The worker spins while hits
// outweigh misses over the last few idle periods, and otherwise sleeps at
// once; a sleep cut short by work scores a hit, so spinning comes back when
// frames come close together again.

// spinScoreMax bounds the score; the worker spins while the score is at
// least spinScoreOn. From the top (where a worker starts), nine misses in
// a row stop the spinning; from the bottom, eight hits start it again.
const (
	spinScoreMax = 16
	spinScoreOn  = 8
)

// spinner is one worker's score (worker goroutine only).
type spinner struct {
	score int
}

func newSpinner() spinner { return spinner{score: spinScoreMax} }

// on reports whether the worker should spin before sleeping.
func (s *spinner) on() bool { return s.score >= spinScoreOn }

// hit records an idle period that work ended within the spin time.
func (s *spinner) hit() {
	if s.score < spinScoreMax {
		s.score++
	}
}

// miss records an idle period longer than the spin time.
func (s *spinner) miss() {
	if s.score > 0 {
		s.score--
	}
}
