package ecn

// SeedPort sets port i's RED generator, so that a test (a fuzz input)
// replays the same draws.
func SeedPort(e *ECN, i int, a, b uint64) { e.ports[i].red.rng.Seed(a, b) }
