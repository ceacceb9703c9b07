package fairness

import (
	"math"
	"testing"
)

func TestJain(t *testing.T) {
	for _, c := range []struct {
		x    []float64
		want float64
	}{{[]float64{1, 1, 1}, 1}, {[]float64{1, 0, 0, 0}, 0.25}, {[]float64{1, 2}, 0.9}, {[]float64{0, 0}, 0}} {
		if got := Jain(c.x); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Jain(%v) = %v, want %v", c.x, got, c.want)
		}
	}
}
