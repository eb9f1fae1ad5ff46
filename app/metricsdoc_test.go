package app

import (
	"github.com/ltiop/ltiop/test/utils/testsource"
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// registeredMetrics finds every ltiop_ metric the Go sources under root declare
// (prometheus.New…(prometheus.…Opts{Name: "ltiop_…"}, []string{labels…}), or a collector's
// prometheus.NewDesc("ltiop_…", help, []string{labels…}, …)), with its labels.
func registeredMetrics(t *testing.T, root string) map[string][]string {
	t.Helper()
	found := map[string][]string{}
	testsource.Inspect(t, func(_ *token.FileSet, n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		fn, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || !strings.HasPrefix(fn.Sel.Name, "New") {
			return true
		}
		if pkg, ok := fn.X.(*ast.Ident); !ok || pkg.Name != "prometheus" {
			return true
		}
		if fn.Sel.Name == "NewDesc" && len(call.Args) > 2 {
			if lit, ok := call.Args[0].(*ast.BasicLit); ok {
				if name, _ := strconv.Unquote(lit.Value); strings.HasPrefix(name, "ltiop_") {
					found[name] = stringList(call.Args[2])
				}
			}
			return true
		}
		opts, ok := call.Args[0].(*ast.CompositeLit)
		if !ok {
			return true
		}
		for _, el := range opts.Elts {
			kv, ok := el.(*ast.KeyValueExpr)
			if k, isIdent := kv.Key.(*ast.Ident); !ok || !isIdent || k.Name != "Name" {
				continue
			}
			lit, ok := kv.Value.(*ast.BasicLit)
			if !ok {
				continue
			}
			name, _ := strconv.Unquote(lit.Value)
			if !strings.HasPrefix(name, "ltiop_") {
				continue
			}
			labels := []string{}
			if len(call.Args) > 1 {
				if l, ok := call.Args[1].(*ast.CompositeLit); ok {
					for _, e := range l.Elts {
						if b, ok := e.(*ast.BasicLit); ok {
							s, _ := strconv.Unquote(b.Value)
							labels = append(labels, s)
						}
					}
				}
			}
			found[name] = labels
		}
		return true
	}, root)
	return found
}

// stringList reads a []string{"a", "b"} literal; anything else is no labels.
func stringList(e ast.Expr) []string {
	labels := []string{}
	if l, ok := e.(*ast.CompositeLit); ok {
		for _, e := range l.Elts {
			if b, ok := e.(*ast.BasicLit); ok {
				s, _ := strconv.Unquote(b.Value)
				labels = append(labels, s)
			}
		}
	}
	return labels
}

var metricRow = regexp.MustCompile("^\\| `(ltiop_[a-z_]+)` \\| ([^|]*)\\|")

// The metrics table of docs/install.md lists every ltiop_ metric the code registers, with
// its labels, and nothing else.
func TestInstallDocListsEveryMetric(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	registered := registeredMetrics(t, root)
	if len(registered) < 10 {
		t.Fatalf("found only %d metrics: the scan is broken", len(registered))
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string][]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		m := metricRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		labels := []string{}
		for _, l := range strings.Split(m[2], ",") {
			if l = strings.Trim(strings.TrimSpace(l), "`"); l != "" {
				labels = append(labels, l)
			}
		}
		documented[m[1]] = labels
	}
	for name, labels := range registered {
		doc, ok := documented[name]
		switch {
		case !ok:
			t.Errorf("metric %s (labels %v) is not in the metrics table of docs/install.md: add a row", name, labels)
		case !slices.Equal(slices.Sorted(slices.Values(doc)), slices.Sorted(slices.Values(labels))):
			t.Errorf("docs/install.md gives %s the labels %v; the code, %v", name, doc, labels)
		}
	}
	for name := range documented {
		if _, ok := registered[name]; !ok {
			t.Errorf("docs/install.md lists metric %s, which the code does not register: remove the row", name)
		}
	}
}
