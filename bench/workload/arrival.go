package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// Arrivals returns n send times from the phase start under a, seeded: the
// same a, n and seed give the same times. The first is at 0 and they never
// decrease; the gaps between them are
//
//   - burst: 0, all at once;
//   - poisson: exponential with mean 1/Rate seconds;
//   - gamma: gamma with shape Burstiness and scale 1/(Rate·Burstiness), mean
//     1/Rate (vLLM's --burstiness: under 1 burstier than Poisson, over 1
//     steadier, 1 is Poisson);
//   - ramp: a Poisson process whose rate grows linearly from From to To
//     over the span D = 2n/(From+To) that n requests are expected to take
//     (and stays at To after it), drawn by time rescaling: unit exponential
//     gaps in Λ(t) = ∫₀ᵗ rate, mapped back through Λ's inverse;
//   - constant: exactly 1/Rate seconds.
//
// A trace's own times (kind trace) are not drawn: Arrivals gives 0 for
// them, and Expand reads them from the trace.
func Arrivals(a Arrival, n int, seed int64) []time.Duration {
	at := make([]time.Duration, n)
	if n == 0 {
		return at
	}
	r := rand.New(rand.NewPCG(uint64(seed), arrivalStream))
	var gap func() float64 // seconds
	switch a.Kind {
	case Poisson:
		gap = func() float64 { return r.ExpFloat64() / a.Rate }
	case Gamma:
		g := distuv.Gamma{Alpha: a.Burstiness, Beta: a.Rate * a.Burstiness, Src: r}
		gap = g.Rand
		if g.Beta == 0 {
			// Rate·Burstiness underflowed (1e-200 each), which gonum's
			// Gamma refuses with a panic: drawn at rate 1 and divided by
			// each in turn, the gaps saturate (Seconds).
			g.Beta = 1
			gap = func() float64 { return g.Rand() / a.Rate / a.Burstiness }
		}
	case Constant:
		gap = func() float64 { return 1 / a.Rate }
	case Ramp:
		inv := rampInverse(a.From, a.To, n)
		y := 0.0
		for i := 1; i < n; i++ {
			y += r.ExpFloat64()
			at[i] = Seconds(inv(y))
		}
		return at
	default:
		return at
	}
	t := 0.0
	for i := 1; i < n; i++ {
		t += gap()
		at[i] = Seconds(t)
	}
	return at
}

// rampInverse returns Λ⁻¹ for a rate rising linearly from r0 to r1 over
// D = 2n/(r0+r1) seconds, so that Λ(D) = n, and constant at r1 after:
// Λ(t) = r0·t + (r1−r0)·t²/(2D) up to D, n + r1·(t−D) after.
func rampInverse(r0, r1 float64, n int) func(y float64) float64 {
	d := float64(n) / (r0/2 + r1/2) // 2n/(r0+r1), whose sum overflows at 1e308
	a := (r1 - r0) / (2 * d)
	return func(y float64) float64 {
		switch {
		case y <= 0:
			return 0
		case y > float64(n):
			return d + (y-float64(n))/r1
		case math.Abs(a) < 1e-300:
			return y / r0
		}
		// The root of a·t² + r0·t − y = 0 in [0, D], in the form that
		// keeps its precision whatever a's sign, and works at r0 = 0.
		return 2 * y / (r0 + math.Sqrt(r0*r0+4*a*y))
	}
}

// String says the arrival process in a few words ("poisson 8/s").
func (a Arrival) String() string {
	switch a.Kind {
	case Poisson, Constant:
		return fmt.Sprintf("%s %g/s", a.Kind, a.Rate)
	case Gamma:
		return fmt.Sprintf("gamma %g/s burstiness %g", a.Rate, a.Burstiness)
	case Ramp:
		return fmt.Sprintf("ramp %g→%g/s", a.From, a.To)
	case OwnTimes:
		return "trace times"
	case "":
		return Burst
	}
	return a.Kind
}
