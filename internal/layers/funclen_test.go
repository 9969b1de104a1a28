package layers

import (
	"go/ast"
	"go/token"
	"strconv"
	"testing"
)

// maxFuncLines is the longest a non-test function may be, its signature
// and closing brace included (issue 13, item 8): past it, a function
// does more than one thing.
const maxFuncLines = 100

// longFuncs lists, as "name: N lines", the functions and methods of f
// longer than maxFuncLines.
func longFuncs(fset *token.FileSet, f *ast.File) []string {
	var out []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
			out = append(out, fd.Name.Name+": "+strconv.Itoa(n)+" lines")
		}
	}
	return out
}

func TestLongFuncsCountsSignatureToClosingBrace(t *testing.T) {
	t.Parallel()
	body := ""
	for range maxFuncLines - 2 {
		body += "\t_ = 0\n"
	}
	// at is exactly maxFuncLines long; over is one line more; a body-less
	// declaration (assembly) has no length.
	src := "package a\n\nfunc at() {\n" + body + "}\n\nfunc over() {\n" + body + "\t_ = 1\n}\n\nfunc asm()\n"
	fset, f := parseSource(t, src)
	got := longFuncs(fset, f)
	if want := "over: " + strconv.Itoa(maxFuncLines+1) + " lines"; len(got) != 1 || got[0] != want {
		t.Fatalf("got %q, want [%q]", got, want)
	}
}

// TestNoFunctionIsLongerThanAHundredLines holds the project's non-test,
// non-assembly functions to maxFuncLines.
func TestNoFunctionIsLongerThanAHundredLines(t *testing.T) {
	t.Parallel()
	eachSource(t, func(fset *token.FileSet, rel string, f *ast.File) {
		for _, s := range longFuncs(fset, f) {
			t.Errorf("%s: %s: split it into parts that each do one thing", rel, s)
		}
	})
}
