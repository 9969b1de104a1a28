package cudaexec

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"
)

// KernelSource is kernels.cu, the CUDA C source of every kernel (extern "C"
// __global__), embedded; NVRTC compiles it at start, the emulator runs it
// on the CPU.
//
//go:embed kernels.cu
var KernelSource string

// KernelSignatures returns every kernel's parameter kinds, in order, as the
// Go side passes them (a test holds them to kernels.cu's declarations).
// The table is written out here, not parsed, so that the test comparing it
// with the source's declarations checks two independent statements.
func KernelSignatures() map[string][]ArgKind {
	m := make(map[string][]ArgKind, len(kernelSigs))
	for k, v := range kernelSigs {
		m[k] = append([]ArgKind(nil), v...)
	}
	return m
}

// kernelSigs is KernelSignatures' table; launch checks every call against it.
var kernelSigs = func() map[string][]ArgKind {
	const (
		p = ArgPtr
		i = ArgInt
		f = ArgFloat
	)
	return map[string][]ArgKind{
		"matmul_t":        {p, i, p, i, p, i, i, i, i},
		"matmul":          {p, i, p, i, p, i, i, i, i},
		"matmul_t_skinny": {p, i, p, i, p, i, i, i, i},
		"matmul_skinny":   {p, i, p, i, p, i, i, i, i},
		"embed":           {p, i, p, i, i, p, p, i, i, i},
		"rmsnorm":         {p, i, p, i, p, i, i, f},
		"layernorm":       {p, i, p, i, p, p, i, i, f},
		"rope":            {p, i, p, p, p, i, i, i},
		"scale":           {p, i, i, i, f},
		"add":             {p, i, p, i, p, i, i, i},
		"copy":            {p, i, p, i, i, i},
		"gather_rows":     {p, i, p, i, i, p, i, i},
		"write_kv":        {p, i, p, i, i, p, i, p, i, p, i, p, i, i, i, i},
		"index_scores":    {p, i, p, i, p, i, p, i, i, p, i, p, p, p, i, i, i, i},
		"topk_select":     {p, p, p, i, p, i, p, p, p, i, i, i},
		"attend":          {p, i, p, i, p, i, i, p, p, i, i, i, i, i, f},
		"silu_mul":        {p, i, p, i, p, i, i, i},
		"sigmoid":         {p, i, p, i, i, i},
		"route":           {p, p, i, p, i, p, i, i, i, i, i, f, i},
		"expert_linear":   {p, i, p, i, i, p, i, p, i, i, i, i},
		"combine":         {p, i, p, i, p, i, i, i, i},
	}
}()

// KernelDecl is one extern "C" __global__ declaration of a kernel source.
type KernelDecl struct {
	Name   string
	Params []KernelParam
}

// KernelParam is one kernel parameter: its C type as written (normalised
// to one of "float*", "const float*", "int*", "const int*", "int",
// "float"), its name, and the Go argument kind that passes it.
type KernelParam struct {
	Type, Name string
	Kind       ArgKind
}

var (
	lineComment  = regexp.MustCompile(`//[^\n]*`)
	blockComment = regexp.MustCompile(`(?s)/\*.*?\*/`)
	globalDecl   = regexp.MustCompile(`extern\s+"C"\s+__global__\s+`)
	declHead     = regexp.MustCompile(`^void\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(`)
	paramRe      = regexp.MustCompile(`^(const\s+)?(float|int)\s*(\*)?\s*(?:__restrict__\s+)?([A-Za-z_][A-Za-z0-9_]*)$`)
)

// ParseKernels returns the extern "C" __global__ declarations of src, in
// source order: each must read `void name(params)` with every parameter
// one of float*, const float*, int*, const int*, int or float and named
// (a pointer may be __restrict__). Anything else is an error naming the
// kernel and the parameter, as is a kernel declared twice.
func ParseKernels(src string) ([]KernelDecl, error) {
	src = blockComment.ReplaceAllString(src, " ")
	src = lineComment.ReplaceAllString(src, "")
	var out []KernelDecl
	seen := map[string]bool{}
	for _, loc := range globalDecl.FindAllStringIndex(src, -1) {
		rest := src[loc[1]:]
		head := declHead.FindStringSubmatch(rest)
		if head == nil {
			return nil, fmt.Errorf("kernel declaration %q: want `void name(params)`", firstLine(rest))
		}
		name := head[1]
		body := rest[len(head[0]):]
		end := strings.IndexByte(body, ')')
		if end < 0 {
			return nil, fmt.Errorf("kernel %s: no closing parenthesis", name)
		}
		if seen[name] {
			return nil, fmt.Errorf("kernel %s declared twice", name)
		}
		seen[name] = true
		d := KernelDecl{Name: name}
		list := strings.TrimSpace(body[:end])
		if list != "" && list != "void" {
			for n, raw := range strings.Split(list, ",") {
				prm, err := parseParam(strings.Join(strings.Fields(raw), " "))
				if err != nil {
					return nil, fmt.Errorf("kernel %s, parameter %d (%q): %w", name, n+1, strings.TrimSpace(raw), err)
				}
				d.Params = append(d.Params, prm)
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// parseParam parses one parameter, its whitespace already collapsed.
func parseParam(s string) (KernelParam, error) {
	m := paramRe.FindStringSubmatch(s)
	if m == nil {
		return KernelParam{}, fmt.Errorf("want one of float*, const float*, int*, const int*, int, float and a name")
	}
	isConst, base, ptr, name := m[1] != "", m[2], m[3] != "", m[4]
	if isConst && !ptr {
		return KernelParam{}, fmt.Errorf("const %s by value: drop the const", base)
	}
	prm := KernelParam{Name: name}
	switch {
	case ptr:
		prm.Kind, prm.Type = ArgPtr, base+"*"
		if isConst {
			prm.Type = "const " + prm.Type
		}
	case base == "int":
		prm.Kind, prm.Type = ArgInt, "int"
	default:
		prm.Kind, prm.Type = ArgFloat, "float"
	}
	return prm, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// checkLaunch panics unless args match kernel's signature in kernelSigs:
// a mismatch is a programming error of this package.
func checkLaunch(kernel string, args []Arg) {
	sig, ok := kernelSigs[kernel]
	if !ok {
		panic(fmt.Sprintf("cudaexec: launch of unknown kernel %q", kernel))
	}
	if len(args) != len(sig) {
		panic(fmt.Sprintf("cudaexec: kernel %s takes %d arguments, got %d", kernel, len(sig), len(args)))
	}
	for n, a := range args {
		if a.Kind != sig[n] {
			panic(fmt.Sprintf("cudaexec: kernel %s argument %d: kind %d, want %d", kernel, n+1, a.Kind, sig[n]))
		}
		if a.Kind == ArgPtr && (a.Mem == nil || a.Off < 0 || a.Off > a.Mem.Len()) {
			panic(fmt.Sprintf("cudaexec: kernel %s argument %d: pointer outside its allocation", kernel, n+1))
		}
	}
}
