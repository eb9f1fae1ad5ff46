// Package testsource walks the product's Go source for tests that check the code against
// documents and rules (every metric documented, every error code in the OpenAPI document,
// …): one walk, so each such test writes only what it looks for.
package testsource

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// Inspect parses every non-test Go file under each root (skipping bin/, testdata/ and
// hidden folders) and calls visit on each node of each file, as ast.Inspect does; fset
// gives the nodes' positions. A file that does not parse fails the test.
func Inspect(t *testing.T, visit func(fset *token.FileSet, n ast.Node) bool, roots ...string) {
	t.Helper()
	fset := token.NewFileSet()
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != root && (d.Name() == "bin" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool { return visit(fset, n) })
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
