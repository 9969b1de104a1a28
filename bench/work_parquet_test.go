package bench

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/glmbench/glmbench/bench/workload"
)

// A dataset phase from a parquet file (DuckDB's ShareGPT-format fixture:
// the system turn of its first conversation kept, the tool turn of its
// sixth passed over) runs against the built-in engine: each request
// completes and sends its conversation's messages, the first user one
// under the nonce.
func TestADataSetPhaseFromParquetRunsOnTheEngine(t *testing.T) {
	t.Parallel()
	o := workOptions(t)
	path := filepath.Join("workload", "testdata", "sharegpt_duckdb.parquet")
	ph := workload.Phase{Name: "chat", Kind: workload.Dataset, Path: path, Requests: 3}
	reqs, err := ph.Expand(1)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"system", "You are terse.", "user", "Name a prime number."},
		{"user", "What is the capital of France?"},
		{"user", "Summarise the tool output."},
	}
	plan, run := runWork(t, o, ph, reqs)
	if len(run.Records) != len(want) {
		t.Fatalf("%d records, want %d", len(run.Records), len(want))
	}
	for i, w := range want {
		msgs := bodyMessages(t, plan.body(i))
		var got []string
		for _, m := range msgs {
			got = append(got, m.Role, m.Content)
		}
		w[len(w)-1] = Prefix(o.Nonce, i) + w[len(w)-1]
		if !slices.Equal(got, w) {
			t.Errorf("request %d sent %q, want %q", i, got, w)
		}
		if reqs[i].AnswerChars == 0 || run.Records[i].MaxTokens < 1 {
			t.Errorf("request %d: answer %d bytes, max_tokens %d", i, reqs[i].AnswerChars, run.Records[i].MaxTokens)
		}
	}
}
