package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var majorVersion = regexp.MustCompile(`^v[0-9]+$`)

// importName is the name a file refers to an import by: its alias, else
// the last element of its path without a major version ("math/rand/v2":
// rand, "gopkg.in/yaml.v3": yaml).
func importName(im *ast.ImportSpec) string {
	if im.Name != nil {
		return im.Name.Name
	}
	p, _ := strconv.Unquote(im.Path.Value)
	parts := strings.Split(p, "/")
	n := parts[len(parts)-1]
	if majorVersion.MatchString(n) && len(parts) > 1 {
		n = parts[len(parts)-2]
	}
	if i := strings.Index(n, ".v"); i > 0 {
		n = n[:i]
	}
	return n
}

// shadows lists, as "line:col kind name", every receiver, parameter,
// result and local variable of f named like a package f imports: inside
// its scope the package cannot be reached, and a reader takes one for the
// other.
func shadows(fset *token.FileSet, f *ast.File) []string {
	imported := map[string]bool{}
	for _, im := range f.Imports {
		if n := importName(im); n != "_" && n != "." {
			imported[n] = true
		}
	}
	var out []string
	report := func(id *ast.Ident, kind string) {
		if id != nil && imported[id.Name] {
			p := fset.Position(id.Pos())
			out = append(out, strconv.Itoa(p.Line)+":"+strconv.Itoa(p.Column)+" "+kind+" "+id.Name)
		}
	}
	fields := func(fl *ast.FieldList, kind string) {
		if fl == nil {
			return
		}
		for _, fd := range fl.List {
			for _, n := range fd.Names {
				report(n, kind)
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.FuncDecl:
			fields(x.Recv, "receiver")
			fields(x.Type.Params, "parameter")
			fields(x.Type.Results, "result")
		case *ast.FuncLit:
			fields(x.Type.Params, "parameter")
			fields(x.Type.Results, "result")
		case *ast.AssignStmt:
			if x.Tok == token.DEFINE {
				for _, l := range x.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						report(id, "variable")
					}
				}
			}
		case *ast.RangeStmt:
			if x.Tok == token.DEFINE {
				for _, e := range []ast.Expr{x.Key, x.Value} {
					if id, ok := e.(*ast.Ident); ok {
						report(id, "variable")
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := x.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, s := range g.Specs {
					for _, id := range s.(*ast.ValueSpec).Names {
						report(id, "variable")
					}
				}
			}
		}
		return true
	})
	return out
}

func TestShadowsFindsALocalNamedLikeAnImport(t *testing.T) {
	t.Parallel()
	const src = `package a

import (
	"io"
	"math/rand/v2"
	yml "gopkg.in/yaml.v3"
	_ "embed"
)

func f(io int) (rand int) {
	for yml := range 3 {
		_ = yml
	}
	var errors, embed int
	_, _ = errors, embed
	return
}
`
	fset, f := parseSource(t, src)
	// errors is not imported and embed only for its side effects: neither
	// is a shadow.
	want := []string{"10:8 parameter io", "10:17 result rand", "11:6 variable yml"}
	if got := shadows(fset, f); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestNoLocalShadowsAPackage keeps the project's non-test code free of
// locals named like a package their file imports (issue 13, item 6).
func TestNoLocalShadowsAPackage(t *testing.T) {
	t.Parallel()
	eachSource(t, func(fset *token.FileSet, rel string, f *ast.File) {
		for _, s := range shadows(fset, f) {
			t.Errorf("%s:%s shadows the package it is named after; rename it", rel, s)
		}
	})
}

// parseSource parses src as the file a.go, for a test's own example.
func parseSource(t *testing.T, src string) (*token.FileSet, *ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "a.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fset, f
}

// eachSource calls fn with every non-test Go file of the module, parsed,
// by its slash path below the module's root.
func eachSource(t *testing.T, fn func(fset *token.FileSet, rel string, f *ast.File)) {
	t.Helper()
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fn(fset, filepath.ToSlash(rel), f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
