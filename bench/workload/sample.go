package workload

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"
)

// Streams of a phase's seed, so that its lengths and its arrivals are
// drawn independently: changing the arrival process leaves the lengths as
// they were.
const (
	lengthStream  = 0x6c656e677468 // "length"
	arrivalStream = 0x617272697661 // "arriva"
)

// sampler draws a length in whole tokens.
type sampler interface {
	draw(r *rand.Rand) int
}

// fixedLen is a constant length.
type fixedLen int

func (f fixedLen) draw(*rand.Rand) int { return int(f) }

// uniformLen draws uniformly from the integers lo..hi.
type uniformLen struct{ lo, hi int }

func (u uniformLen) draw(r *rand.Rand) int { return u.lo + r.IntN(u.hi-u.lo+1) }

// rangeLen draws lengths uniform over the whole tokens in [r·L, L], at
// least 1: SGLang's --random-range-ratio, whose r = 1 is L every time and
// r = 0 anything from 1 to L. (Issue 15 wrote the range as [(1−r)·L, L];
// the flag it names, and the values its users pass, are SGLang's.)
func rangeLen(l int, r float64) sampler {
	lo := int(math.Ceil(r*float64(l) - 1e-9))
	lo = max(lo, 1)
	if lo >= l {
		return fixedLen(l)
	}
	return uniformLen{lo, l}
}

// sampler returns the distribution's sampler: uniform over the whole
// tokens Min..Max, or a normal or log-normal rounded to the nearest whole
// token and redrawn until it falls in [Min, Max]. validate has made sure
// that [Min, Max] holds at least minMass of it.
func (d *Dist) sampler() sampler {
	if d.Dist == "uniform" {
		return uniformLen{d.Min, d.Max}
	}
	return boundedLen{d: d}
}

// boundedLen is a normal or log-normal length bounded by redrawing.
type boundedLen struct{ d *Dist }

func (b boundedLen) draw(r *rand.Rand) int {
	d := b.d
	mu, sigma := d.logParams()
	// With at least minMass inside the bounds, 1e6 misses in a row has
	// probability under 0.99^1e6; the clamp only keeps the loop finite.
	for range 1_000_000 {
		z := r.NormFloat64()
		x := d.Mean + d.StdDev*z
		if d.Dist == "lognormal" {
			x = math.Exp(mu + sigma*z)
		}
		if k := math.Round(x); k >= float64(d.Min) && k <= float64(d.Max) {
			return int(k)
		}
	}
	return min(max(int(math.Round(d.Mean)), d.Min), d.Max)
}

// logParams are a log-normal's μ and σ, those of the length's log, from
// the length's mean m and standard deviation s: σ² = ln(1 + s²/m²),
// μ = ln m − σ²/2.
func (d *Dist) logParams() (mu, sigma float64) {
	s2 := math.Log1p(d.StdDev * d.StdDev / (d.Mean * d.Mean))
	return math.Log(d.Mean) - s2/2, math.Sqrt(s2)
}

// mass is the share of the unbounded distribution that rounds into
// [Min, Max]: the chance a draw is kept.
func (d *Dist) mass() float64 {
	lo, hi := float64(d.Min)-0.5, float64(d.Max)+0.5
	switch d.Dist {
	case "normal":
		n := distuv.Normal{Mu: d.Mean, Sigma: d.StdDev}
		return n.CDF(hi) - n.CDF(lo)
	case "lognormal":
		mu, sigma := d.logParams()
		l := distuv.LogNormal{Mu: mu, Sigma: sigma}
		return l.CDF(hi) - l.CDF(lo)
	}
	return 1
}

// String says the distribution in a few words ("lognormal 300±200 in
// [32, 1024]").
func (d *Dist) String() string {
	if d.Dist == "uniform" {
		return fmt.Sprintf("uniform [%d, %d]", d.Min, d.Max)
	}
	return fmt.Sprintf("%s %g±%g in [%d, %d]", d.Dist, d.Mean, d.StdDev, d.Min, d.Max)
}

// lengths returns a random phase's input and output samplers.
func (p *Phase) lengths() (in, out sampler) {
	side := func(l int, d *Dist) sampler {
		if d != nil {
			return d.sampler()
		}
		r := 1.0 // fixed, when a phase built in code gives none
		if p.RangeRatio != nil {
			r = *p.RangeRatio
		}
		return rangeLen(l, r)
	}
	return side(p.InputTokens, p.Input), side(p.OutputTokens, p.Output)
}
