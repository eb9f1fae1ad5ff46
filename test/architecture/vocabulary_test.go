package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// wireValue matches the LTI vocabulary that has one home (api/ltiwire): scope URIs, and the
// typ headers of the JWTs ltiop signs (besides "JWT", which is also a form field's name).
var wireValue = regexp.MustCompile(`^https://purl\.imsglobal\.org/spec/[^/]+/scope/|^[a-z-]+\+jwt$`)

// notProduct are the folders whose code is no product code: simulators keep their own
// vocabulary (they never import ltiop's), tests and dev tools write literals where they
// check them.
var notProduct = []string{"simulators", "test", "hack", "bin", "docs", "config", "charts"}

// TestWireVocabularyDefinedOnce fails when a scope URI or a typ value is written as a
// string literal more than once in product code: the copies drift apart. CRD markers are
// comments, so the Enum of api/v1alpha1 is not read.
func TestWireVocabularyDefinedOnce(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string][]string{} // value → positions
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || slices.Contains(notProduct, top)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if v, err := strconv.Unquote(lit.Value); err == nil && wireValue.MatchString(v) {
				pos := fset.Position(lit.Pos())
				pos.Filename, _ = filepath.Rel(root, pos.Filename)
				seen[v] = append(seen[v], pos.String())
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 {
		t.Fatal("no scope URI found: the walk reads nothing, fix this test")
	}
	for _, v := range slices.Sorted(maps.Keys(seen)) {
		at := seen[v]
		if len(at) > 1 {
			t.Errorf("%q is written %d times (%s): name it once in api/ltiwire and use the constant", v, len(at), strings.Join(at, ", "))
		}
	}
}
