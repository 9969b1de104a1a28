package evalcompare

import (
	"context"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/cmd/cmdtest"
	"github.com/glmbench/glmbench/cmd/cmdutil"
	"github.com/glmbench/glmbench/reports"
	"github.com/glmbench/glmbench/reports/schema"
)

// execute runs eval compare and returns its exit code, stdout and stderr.
func execute(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	f, out, errOut := cmdutil.TestFactory(context.Background(), nil)
	err := cmdtest.Execute(f, NewCmdCompare, args...)
	return cmdutil.ExitCode(err), out.String(), errOut.String()
}

// compareBuiltins compares two built-in engines on a few prompts and
// returns the report's equivalence section.
func compareBuiltins(t *testing.T, args ...string) *schema.Equivalence {
	t.Helper()
	dir := t.TempDir()
	code, stdout, stderr := execute(t, append([]string{"--out", dir, "--limit", "12", "--tokens", "24"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	in := cmdtest.Load(t, dir)
	eq := in.Report.Equivalence
	if eq == nil {
		t.Fatal("no equivalence section")
	}
	if !strings.Contains(stdout, "verdict: "+eq.Verdict) || !strings.Contains(stdout, "rule: ") {
		t.Errorf("stdout does not give the verdict and its rule:\n%s", stdout)
	}
	md := cmdtest.ReadFile(t, dir, reports.ReportMD)
	if !strings.Contains(md, "## Equivalence") || !strings.Contains(md, eq.Verdict) {
		t.Errorf("report.md lacks the equivalence section")
	}
	items := cmdtest.ReadFile(t, dir, reports.EvalsJSONL)
	if n := strings.Count(items, "\n"); n != eq.Items {
		t.Errorf("evals.jsonl has %d rows for %d prompts", n, eq.Items)
	}
	t.Logf("%s: exact %v top1 %v KL %v", eq.Verdict, show(eq.ExactMatch), show(eq.Top1Agreement), show(eq.KLMean))
	return eq
}

func show(v *float64) any {
	if v == nil {
		return "nil"
	}
	return *v
}

// The engine is deterministic and batch-invariant, so the same checkpoint
// twice is identical: every continuation the same, every logprob equal.
func TestTheSameCheckpointTwiceIsIdentical(t *testing.T) {
	t.Parallel()
	eq := compareBuiltins(t)
	if eq.Verdict != schema.VerdictIdentical || eq.ExactMatch == nil || *eq.ExactMatch != 1 || eq.KLMean == nil || *eq.KLMean != 0 {
		t.Fatalf("verdict %q, exact %v, KL %v: want identical, 1, 0", eq.Verdict, show(eq.ExactMatch), show(eq.KLMean))
	}
}

// Weights of another seed are another model.
func TestAnotherSeedIsADifferentModel(t *testing.T) {
	t.Parallel()
	if eq := compareBuiltins(t, "--seed", "2"); eq.Verdict != schema.VerdictDifferent {
		t.Fatalf("verdict %q, want %q", eq.Verdict, schema.VerdictDifferent)
	}
}

// bf16 weights are the same model at another precision: numerically
// different, with a small nonzero KL.
func TestBF16WeightsAreNumericallyDifferent(t *testing.T) {
	t.Parallel()
	eq := compareBuiltins(t, "--weight-dtype", "bf16")
	if eq.Verdict != schema.VerdictNumerically || eq.KLMean == nil || *eq.KLMean <= 0 {
		t.Fatalf("verdict %q, KL %v: want %q with a KL above 0", eq.Verdict, show(eq.KLMean), schema.VerdictNumerically)
	}
}

func TestBadFlagsExitTwoBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	url, hits := cmdtest.CountingEndpoint(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--endpoint", url, "--tokens", "0"}, "--tokens"},
		{[]string{"--endpoint", url, "--top-logprobs", "21"}, "--top-logprobs"},
		{[]string{"--endpoint", url, "--weight-dtype", "bf16"}, "--weight-dtype"},
		{[]string{"--endpoint", url, "--reference-endpoint", url, "--reference-seed", "3"}, "--reference-seed"},
		{[]string{"--endpoint", url, "--dataset", "/nonexistent/docs.jsonl"}, "/nonexistent/docs.jsonl"},
		{[]string{"--endpoint", url, "--reference-weight-dtype", "int4"}, "int4"},
		// A device is read forever: refused, not hung on.
		{[]string{"--endpoint", url, "--dataset", "/dev/zero"}, "/dev/zero"},
	} {
		code, _, stderr := execute(t, c.args...)
		cmdtest.WantRefused(t, code, stderr, hits, c.want)
	}
}

// nvfp4 drifts further than bf16, and is still the same model: more
// prompts diverge, the KL is larger, and most positions keep their argmax.
func TestNVFP4DriftsFurtherThanBF16AndIsStillTheSameModel(t *testing.T) {
	t.Parallel()
	bf16 := compareBuiltins(t, "--weight-dtype", "bf16")
	nvfp4 := compareBuiltins(t, "--weight-dtype", "nvfp4")
	if nvfp4.Verdict != schema.VerdictNumerically {
		t.Fatalf("nvfp4: verdict %q, want %q", nvfp4.Verdict, schema.VerdictNumerically)
	}
	if *nvfp4.KLMean <= *bf16.KLMean || *nvfp4.Top1Agreement >= *bf16.Top1Agreement || *nvfp4.TokenAgreement >= *bf16.TokenAgreement {
		t.Errorf("nvfp4 KL %g, top-1 %.3f, token agreement %.3f; bf16 %g, %.3f, %.3f: want nvfp4 further off on each",
			*nvfp4.KLMean, *nvfp4.Top1Agreement, *nvfp4.TokenAgreement, *bf16.KLMean, *bf16.Top1Agreement, *bf16.TokenAgreement)
	}
	if *nvfp4.Top1Agreement < 0.5 {
		t.Errorf("nvfp4 top-1 agreement %.3f: want most positions' argmax kept", *nvfp4.Top1Agreement)
	}
}
