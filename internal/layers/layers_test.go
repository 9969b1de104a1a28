package layers

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/glmbench/glmbench/"

// rule says that no package matching from may link (import, directly or
// not, outside its tests) a package matching any of not. A pattern is a
// path below the module; "x/..." matches x and everything under it, "x"
// only x itself. only, when set, replaces not: the package may link no
// project package but these (a leaf).
type rule struct {
	from string
	not  []string
	only []string
	why  string
}

var rules = []rule{
	{from: "reports/...", not: []string{"engine/...", "kernels/...", "internal/cuda", "bench/...", "endpoints/...", "evals/...", "cmd/..."},
		why: "the report writers are pure functions of records: they neither make requests nor run load, and an engine edit must not re-run their tests"},
	{from: "bench/...", not: []string{"engine/...", "kernels/...", "internal/cuda", "evals/...", "reports", "cmd/..."},
		why: "the load runner talks to any endpoint through the client; the built-in engine is started by cmd/target"},
	{from: "evals/...", not: []string{"engine/...", "kernels/...", "internal/cuda", "bench/...", "reports", "cmd/..."},
		why: "the evals score any endpoint through the client"},
	{from: "endpoints/...", not: []string{"engine/...", "kernels/...", "internal/cuda", "bench/...", "reports", "cmd/..."},
		why: "the client knows no phases, and the engine is just another endpoint"},
	{from: "engine/...", not: []string{"bench/...", "evals/...", "reports/...", "endpoints/...", "cmd/..."},
		why: "the engine serves the API; it knows nothing of the harness"},
	{from: "kernels/...", not: []string{"engine/...", "internal/cuda", "cmd/..."},
		why: "kernels sit below the model"},
	{from: "reports/schema", only: []string{},
		why: "the shared types are the leaf everything imports"},
	{from: "reports/summary", only: []string{"reports/schema", "internal/text"},
		why: "phase metrics are shared by the load runner and the report reader, so they link neither"},
	{from: "reports/serverside", only: []string{"reports/schema", "internal/..."},
		why: "a phase's server block is computed by the load runner and recomputed by the report reader, so it links neither"},
	{from: "reports/slo", only: []string{"reports/schema", "reports/summary", "reports/threshold", "internal/badinput", "internal/boundedfile", "internal/text"},
		why: "SLOs and sweep points are recomputed by the report reader and measured by the load runner, so they link neither"},
	{from: "reports/paired", only: []string{},
		why: "paired statistics are shared by the evals that measure and the reports that compare, so they link neither"},
	{from: "internal/badinput", only: []string{},
		why: "the one bad-input error is returned by every layer, so it links none"},
	{from: "internal/boundedfile", only: []string{},
		why: "every layer reads its small input files through it, so it links none"},
	{from: "cmd/...", not: []string{"engine/enginetest", "endpoints/endpointstest", "cmd/cmdtest"},
		why: "the test fakes import testing and are for tests only"},
	{from: "engine/...", not: testOnly, why: testOnlyWhy},
	{from: "cmd/...", not: testOnly, why: testOnlyWhy},
	{from: "bench/...", not: []string{"engine/enginetest", "endpoints/endpointstest", "internal/parquetcol/parquettest"},
		why: "the test fakes import testing and are for tests only"},
	{from: "evals/...", not: []string{"engine/enginetest", "endpoints/endpointstest", "internal/parquetcol/parquettest"},
		why: "the test fakes import testing and are for tests only"},
	{from: "reports/...", not: []string{"engine/enginetest", "endpoints/endpointstest"},
		why: "the test fakes import testing and are for tests only"},
	{from: "endpoints/conform", not: []string{"engine/enginetest", "endpoints/endpointstest"},
		why: "the test fakes import testing and are for tests only"},
	{from: "internal/cuda", only: []string{},
		why: "the CUDA bindings know the driver, NVRTC and cuBLAS, nothing of the model"},
	{from: "engine/model", not: []string{"engine/cudaexec/...", "internal/cuda"},
		why: "the CPU model is the reference the device path is checked against; it never links that path"},
	{from: "internal/text", only: []string{},
		why: "every layer folds and cuts what it says with it, so it links none"},
	{from: "internal/syncbuf", only: []string{},
		why: "the commands' and the engine's tests share it; it links neither"},
	{from: "internal/nonce", only: []string{},
		why: "bench and endpoints/conform both draw the run nonce; it links neither"},
	{from: "internal/parquetcol", only: []string{"internal/text"},
		why: "the parquet column reader is shared by the evals and the workload loader, so it links neither"},
}

// testOnly are the engine's test fakes, its kernel emulator and fake CUDA
// driver (built with g++ at test time), and the parquet test files' writer:
// no serving package links them.
var testOnly = []string{"engine/enginetest", "engine/cudaexec/cudatest", "engine/cudaexec/emu", "engine/cudaexec/fakecuda", "internal/parquetcol/parquettest"}

const testOnlyWhy = "the test fakes, the kernel emulator and the fake CUDA driver (built with g++ at test time) are for tests only"

// pkg is one package as go list describes it.
type pkg struct {
	imports []string // direct, project packages only, without the module prefix
	deps    []string // transitive, likewise
}

func match(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

// load runs go list over the whole module.
func load(t *testing.T) map[string]pkg {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	gomod, err := exec.Command(goTool, "env", "GOMOD").Output()
	gomod = bytes.TrimSpace(gomod)
	if err != nil || len(gomod) == 0 || string(gomod) == os.DevNull {
		t.Skipf("not inside the module (go env GOMOD: %q, %v)", gomod, err)
	}
	cmd := exec.Command(goTool, "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", "./...")
	cmd.Dir = filepath.Dir(string(gomod))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	local := func(list string) []string {
		var ps []string
		for _, p := range strings.Fields(list) {
			if rest, ok := strings.CutPrefix(p, module); ok {
				ps = append(ps, rest)
			}
		}
		return ps
	}
	pkgs := map[string]pkg{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, "|")
		if len(parts) != 3 {
			t.Fatalf("go list line %q", line)
		}
		path, ok := strings.CutPrefix(parts[0], module)
		if !ok {
			continue
		}
		pkgs[path] = pkg{imports: local(parts[1]), deps: local(parts[2])}
	}
	return pkgs
}

// chain is an import path from one package to another, for the message.
func chain(pkgs map[string]pkg, from, to string) string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var hops []string
			for q := to; q != ""; q = prev[q] {
				hops = append([]string{q}, hops...)
			}
			return strings.Join(hops, " → ")
		}
		for _, n := range pkgs[p].imports {
			if _, seen := prev[n]; !seen {
				prev[n] = p
				queue = append(queue, n)
			}
		}
	}
	return from + " → … → " + to
}

// violations says, one line each, where pkgs break rules.
func violations(pkgs map[string]pkg, rules []rule) []string {
	var out []string
	for _, r := range rules {
		matched := false
		for path, p := range pkgs {
			if !match(r.from, path) {
				continue
			}
			matched = true
			if r.forbids(path) && r.only == nil {
				// A package the rule keeps out is not held to it: a test
				// fake (cmd/cmdtest) may build on another.
				continue
			}
			for _, dep := range p.deps {
				if r.forbids(dep) {
					out = append(out, fmt.Sprintf("%s links %s (%s): %s", path, dep, chain(pkgs, path, dep), r.why))
				}
			}
		}
		if !matched {
			out = append(out, fmt.Sprintf("the rule for %s matches no package: the layout changed, so change the rule", r.from))
		}
	}
	slices.Sort(out)
	return out
}

func (r rule) forbids(dep string) bool {
	for _, no := range r.not {
		if match(no, dep) {
			return true
		}
	}
	if r.only == nil {
		return false
	}
	for _, ok := range r.only {
		if match(ok, dep) {
			return false
		}
	}
	return true
}

func TestNoPackageLinksWhatItsLayerMustNot(t *testing.T) {
	t.Parallel()
	for _, v := range violations(load(t), rules) {
		t.Error(v)
	}
}

// TestTheRulesCatchALayerBreak runs the rules over made-up graphs: the
// report writers reaching the engine through the runner, as they once did,
// and a leaf that grew an import.
func TestTheRulesCatchALayerBreak(t *testing.T) {
	t.Parallel()
	if !match("engine/...", "engine") || !match("engine/...", "engine/sched") || match("engine/...", "enginex") || match("reports", "reports/schema") {
		t.Fatal("match is wrong")
	}
	broken := map[string]pkg{
		"reports":        {imports: []string{"bench", "reports/schema"}, deps: []string{"bench", "endpoints", "engine", "reports/schema"}},
		"bench":          {imports: []string{"endpoints", "reports/schema"}, deps: []string{"endpoints", "engine", "reports/schema"}},
		"endpoints":      {imports: []string{"engine"}, deps: []string{"engine"}},
		"engine":         {},
		"reports/schema": {imports: []string{"internal/rxstamp"}, deps: []string{"internal/rxstamp"}},
	}
	rs := []rule{
		{from: "reports/...", not: []string{"engine/...", "bench/..."}, why: "r"},
		{from: "reports/schema", only: []string{}, why: "leaf"},
	}
	want := []string{
		"reports links bench (reports → bench): r",
		"reports links engine (reports → bench → endpoints → engine): r",
		"reports/schema links internal/rxstamp (reports/schema → internal/rxstamp): leaf",
	}
	if got := violations(broken, rs); !slices.Equal(got, want) {
		t.Fatalf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	fixed := map[string]pkg{
		"reports":        {imports: []string{"reports/schema"}, deps: []string{"reports/schema"}},
		"reports/schema": {},
	}
	if got := violations(fixed, rs); len(got) != 0 {
		t.Fatalf("violations of a sound graph: %q", got)
	}
	if got := violations(fixed, []rule{{from: "bench/...", not: []string{"engine/..."}, why: "b"}}); len(got) != 1 || !strings.Contains(got[0], "matches no package") {
		t.Fatalf("a rule that matches nothing: %q", got)
	}
}
