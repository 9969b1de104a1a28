// Package sampler picks the next token from a row of logits: greedy argmax,
// or a seeded draw after temperature, top-k, top-p and min-p, as the OpenAI
// sampling parameters ask. It also holds the log-softmax and top-k helpers
// behind OpenAI `logprobs` and `top_logprobs`.
//
// A Sampler belongs to one request: its random stream is seeded once, so the
// same seed and the same logits give the same tokens, whatever else the
// engine runs beside it. It keeps its scratch space between calls, so Sample
// does not allocate after the first call (or after the vocabulary grows).
package sampler

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// GreedyBelow is the temperature under which sampling is greedy, as in SGLang
// and vLLM, where temperature 0 means argmax (1/T would overflow).
const GreedyBelow = 1e-5

// pcgStream is the second PCG word: a fixed odd constant, so a request's
// random stream depends on its seed alone.
const pcgStream = 0x9e3779b97f4a7c15

// Params are a request's sampling parameters, with OpenAI's meanings.
type Params struct {
	// Temperature divides the logits; below GreedyBelow (0 included) the
	// sampler is greedy and ignores the other fields.
	Temperature float32
	// TopP keeps the smallest set of most likely tokens whose probability
	// mass reaches TopP; 0 or ≥ 1 is off.
	TopP float32
	// TopK keeps the TopK most likely tokens; 0 or below is off.
	TopK int
	// MinP keeps tokens whose probability is at least MinP times the most
	// likely token's; 0 or below is off.
	MinP float32
}

// Greedy reports whether p selects argmax decoding.
func (p Params) Greedy() bool {
	return !(p.Temperature >= GreedyBelow) // NaN is greedy too
}

// Sampler draws tokens for one request. It is not safe for concurrent use.
type Sampler struct {
	p   Params
	rng *rand.Rand
	// prob holds exp((logit − max)/T) per id: unnormalised probabilities.
	prob []float64
	// idx holds candidate ids, most likely first once sorted.
	idx []int32
}

// New returns a sampler with parameters p whose random stream is seeded by
// seed (a PCG from math/rand/v2).
func New(p Params, seed uint64) *Sampler {
	return &Sampler{p: p, rng: rand.New(rand.NewPCG(seed, pcgStream))}
}

// Sample returns the next token id for one row of logits (one per vocabulary
// id). Greedy parameters give Argmax. Otherwise it scales by 1/Temperature,
// takes the softmax in float64 after subtracting the maximum, keeps the
// TopK most likely, then the smallest most-likely set whose mass reaches TopP
// of what is left, then those at least MinP times the most likely
// (SGLang's order: top-k, top-p, min-p), renormalises, and draws. "Most
// likely first" breaks ties by lower id, so the kept set is deterministic.
// NaN logits count as −Inf; a row with no finite maximum (all −Inf or NaN,
// or a +Inf) gives Argmax.
// It panics on an empty row.
func (s *Sampler) Sample(logits []float32) int32 {
	if len(logits) == 0 {
		panic("sampler: Sample of an empty row of logits")
	}
	if s.p.Greedy() {
		return Argmax(logits)
	}
	n := len(logits)
	if cap(s.prob) < n {
		s.prob = make([]float64, n)
		s.idx = make([]int32, n)
	}
	prob := s.prob[:n]

	maxLogit := math.Inf(-1)
	for _, l := range logits {
		if float64(l) > maxLogit {
			maxLogit = float64(l)
		}
	}
	if math.IsInf(maxLogit, 0) {
		// No distribution (every logit −Inf or NaN) or a +Inf that would
		// take all of it: the largest logit is the only sensible answer.
		return Argmax(logits)
	}
	invT := 1 / float64(s.p.Temperature)
	total := 0.0
	for i, l := range logits {
		// Below −745 float64's exp is exactly 0: skip the call (a simulated
		// model's one-hot logits are almost all there).
		x := 0.0
		if z := (float64(l) - maxLogit) * invT; z > -745.2 {
			x = math.Exp(z)
		}
		if math.IsNaN(x) {
			x = 0
		}
		prob[i] = x
		total += x
	}

	topK := s.p.TopK > 0 && s.p.TopK < n
	topP := s.p.TopP > 0 && s.p.TopP < 1
	minP := s.p.MinP > 0
	if !topK && !topP && !minP {
		// No filter: draw straight from the softmax, in id order.
		return draw(s.rng.Float64()*total, prob, nil)
	}

	// Candidates: tokens with a non-zero probability, the most likely first.
	idx := s.idx[:0]
	for i, x := range prob {
		if x > 0 {
			idx = append(idx, int32(i))
		}
	}
	if topK && s.p.TopK < len(idx) {
		idx = selectTop(idx, prob, s.p.TopK)
	} else {
		slices.SortFunc(idx, func(a, b int32) int { return order(prob, a, b) })
	}
	if topP {
		mass := 0.0
		for _, id := range idx {
			mass += prob[id]
		}
		limit, cum := float64(s.p.TopP)*mass, 0.0
		for j, id := range idx {
			cum += prob[id]
			if cum >= limit {
				idx = idx[:j+1]
				break
			}
		}
	}
	if minP {
		floor := float64(s.p.MinP) * prob[idx[0]]
		for j, id := range idx {
			if prob[id] < floor {
				idx = idx[:j]
				break
			}
		}
	}
	mass := 0.0
	for _, id := range idx {
		mass += prob[id]
	}
	return draw(s.rng.Float64()*mass, prob, idx)
}

// draw returns the candidate at which the running sum of prob passes u: the
// ids in idx, or every id when idx is nil. Rounding can leave u just above
// the sum; then the last candidate with a non-zero probability is chosen.
func draw(u float64, prob []float64, idx []int32) int32 {
	last := int32(-1)
	if idx == nil {
		for i, x := range prob {
			if x > 0 {
				if u < x {
					return int32(i)
				}
				u -= x
				last = int32(i)
			}
		}
		return last
	}
	for _, id := range idx {
		if u < prob[id] {
			return id
		}
		u -= prob[id]
		last = id
	}
	return last
}

// order sorts ids most likely first, equal probabilities by lower id.
func order(prob []float64, a, b int32) int {
	switch {
	case prob[a] > prob[b]:
		return -1
	case prob[a] < prob[b]:
		return 1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// selectTop moves the k most likely of idx to its front, most likely first,
// and returns them. It keeps a heap whose root is the worst of the best k so
// far, so most ids cost one comparison; then it sorts the k.
func selectTop(idx []int32, prob []float64, k int) []int32 {
	// worse reports whether heap entry i belongs nearer the root than j.
	worse := func(i, j int) bool { return order(prob, idx[i], idx[j]) > 0 }
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= k {
				return
			}
			if c+1 < k && worse(c+1, c) {
				c++
			}
			if !worse(c, i) {
				return
			}
			idx[i], idx[c] = idx[c], idx[i]
			i = c
		}
	}
	for i := k/2 - 1; i >= 0; i-- {
		down(i)
	}
	for j := k; j < len(idx); j++ {
		if order(prob, idx[j], idx[0]) < 0 {
			idx[0] = idx[j]
			down(0)
		}
	}
	top := idx[:k]
	slices.SortFunc(top, func(a, b int32) int { return order(prob, a, b) })
	return top
}

// Argmax returns the id of the largest logit, the lowest id among equals;
// NaN loses to every number. An all-NaN or all −Inf row gives 0.
func Argmax(logits []float32) int32 {
	best := int32(0)
	for i := 1; i < len(logits); i++ {
		// !(x <= y) would let NaN win; compare so that NaN never does.
		if logits[i] > logits[best] || (logits[best] != logits[best] && logits[i] == logits[i]) {
			best = int32(i)
		}
	}
	return best
}

// LogSoftmax writes log(softmax(logits)) into dst, in nats, accumulating in
// float64 after subtracting the maximum so no exponential overflows. dst
// may be logits itself. A NaN logit gives NaN and takes no probability; a
// row whose maximum is not finite (all −Inf or NaN, or a +Inf) gives NaN
// everywhere, since it has no distribution. It panics when the lengths differ.
func LogSoftmax(dst, logits []float32) {
	if len(dst) != len(logits) {
		panic(fmt.Sprintf("sampler: LogSoftmax into %d values from %d logits", len(dst), len(logits)))
	}
	maxLogit := math.Inf(-1)
	for _, l := range logits {
		if float64(l) > maxLogit {
			maxLogit = float64(l)
		}
	}
	if math.IsInf(maxLogit, -1) || math.IsInf(maxLogit, 1) {
		for i := range dst {
			dst[i] = float32(math.NaN())
		}
		return
	}
	sum := 0.0
	for _, l := range logits {
		if l == l {
			sum += math.Exp(float64(l) - maxLogit)
		}
	}
	lse := maxLogit + math.Log(sum)
	for i, l := range logits {
		dst[i] = float32(float64(l) - lse)
	}
}

// TopLogprobs returns the k largest of logprobs (by convention from
// LogSoftmax) and their ids, largest first, equal values by lower id, NaN
// after every number; k is capped at len(logprobs), and k ≤ 0 gives none.
// It allocates its results: it runs only for requests that ask for
// top_logprobs.
func TopLogprobs(logprobs []float32, k int) (ids []int32, vals []float32) {
	k = min(k, len(logprobs))
	if k <= 0 {
		return nil, nil
	}
	ids = make([]int32, 0, k)
	vals = make([]float32, 0, k)
	// before reports whether value v (id i) ranks above value w (a lower id).
	before := func(v, w float32) bool { return v > w || (w != w && v == v) }
	for i, v := range logprobs {
		if len(ids) == k && !before(v, vals[k-1]) {
			continue
		}
		// Insert after every kept value that v does not beat: equal values
		// keep id order because ids arrive in increasing order.
		j := len(ids)
		for j > 0 && before(v, vals[j-1]) {
			j--
		}
		if len(ids) < k {
			ids, vals = append(ids, 0), append(vals, 0)
		}
		copy(ids[j+1:], ids[j:len(ids)-1])
		copy(vals[j+1:], vals[j:len(vals)-1])
		ids[j], vals[j] = int32(i), v
	}
	return ids, vals
}
