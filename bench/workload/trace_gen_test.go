package workload

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite samples/trace.jsonl from genTrace")

// genTrace writes the embedded trace: 90 requests over exactly 60 s
// (1.5/s), Poisson gaps rescaled so that the last is at 60,000 ms, inputs
// log-uniform in [32, 1024], outputs uniform in [4, 32], and mooncake's
// hash_ids (one per 512-token block), which the loader ignores.
func genTrace() []byte {
	const n = 90
	r := rand.New(rand.NewPCG(15, 60))
	cum := make([]float64, n)
	for i := 1; i < n; i++ {
		cum[i] = cum[i-1] + r.ExpFloat64()
	}
	var b bytes.Buffer
	block := 0
	for i := range n {
		ts := math.Round(60000 * cum[i] / cum[n-1])
		in := int(math.Round(32 * math.Pow(32, r.Float64())))
		out := 4 + r.IntN(29)
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [`, int(ts), in, out)
		for k := range (in + 511) / 512 {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprint(&b, block)
			block++
		}
		b.WriteString("]}\n")
	}
	return b.Bytes()
}

func TestEmbeddedTraceIsTheGeneratorsAndSpans60s(t *testing.T) {
	want := genTrace()
	if *update {
		if err := os.WriteFile("samples/trace.jsonl", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := files.ReadFile("samples/trace.jsonl")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("samples/trace.jsonl is not genTrace's output (go test -run EmbeddedTrace -update): %v", err)
	}
	ents, err := loadTrace(bytes.NewReader(got), "trace.jsonl", 0, 1e-3, 1)
	if err != nil {
		t.Fatal(err)
	}
	last := ents[len(ents)-1]
	if ents[0].At != 0 || last.At.Seconds() != 60 || len(ents) != 90 {
		t.Fatalf("trace spans %v with %d requests, want 60s and 90", last.At, len(ents))
	}
	for _, e := range ents {
		if e.Input < 32 || e.Input > 1024 || e.Output < 4 || e.Output > 32 {
			t.Fatalf("line %d: lengths %d/%d outside [32,1024]/[4,32]", e.Line, e.Input, e.Output)
		}
	}
}
