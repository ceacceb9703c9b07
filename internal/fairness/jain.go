// Package fairness holds the fairness measures the tests and benchmarks report.
package fairness

// Jain is Jain's fairness index of x: (sum x)^2 / (n * sum x^2). It is 1
// when all shares are equal and 1/n when one share takes everything.
func Jain(x []float64) float64 {
	var s, s2 float64
	for _, v := range x {
		s += v
		s2 += v * v
	}
	if s2 == 0 {
		return 0
	}
	return s * s / (float64(len(x)) * s2)
}
