package architecture

import (
	"encoding/json"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// writePackage is the web server's write side: the one package whose code may write to
// the API server (issue #23 item 2).
const writePackage = module + "/webserver/stores/writes"

// writeExceptions are API-server writes of the web server made outside writePackage on
// purpose: package → method (as writeCall names it) → reason. Empty is the goal.
var writeExceptions = map[string]map[string]string{
	module + "/webserver/stores/launchhealth": {
		"EventRecorder.Eventf": "Events about refused launches go through the manager's event broadcaster, " +
			"which batches and rate-limits them; they change no registration",
	},
	module + "/webserver/stores/platformcheck": {
		"EventRecorder.Eventf": "Events on a reachability condition's transitions, through the manager's " +
			"event broadcaster as launch health's; they change no registration",
	},
}

// writeMethods are the methods that write, by the package that declares them: the
// controller-runtime client (its Writer, StatusWriter and SubResourceWriter), client-go's
// typed and dynamic clients, and the event recorders.
var writeMethods = []struct {
	pkg     string // import path, or prefix when it ends in "/"
	methods []string
}{
	{"sigs.k8s.io/controller-runtime/pkg/client", []string{"Create", "Update", "Patch", "Apply", "Delete", "DeleteAllOf"}},
	{"k8s.io/client-go/kubernetes/typed/", []string{"Create", "Update", "UpdateStatus", "Patch", "Apply", "ApplyStatus", "Delete", "DeleteCollection"}},
	{"k8s.io/client-go/dynamic", []string{"Create", "Update", "UpdateStatus", "Patch", "Apply", "ApplyStatus", "Delete", "DeleteCollection"}},
	{"k8s.io/client-go/tools/events", []string{"Eventf"}},
	{"k8s.io/client-go/tools/internal/events", []string{"Eventf"}}, // tools/events.EventRecorder is an alias of this one
	{"k8s.io/client-go/tools/record", []string{"Event", "Eventf", "AnnotatedEventf"}},
}

// writeCall names the API-server write fn is (as Type.Method), or "" when it is none.
func writeCall(fn *types.Func) string {
	if fn.Pkg() == nil {
		return ""
	}
	path := fn.Pkg().Path()
	for _, w := range writeMethods {
		if (path == w.pkg || strings.HasSuffix(w.pkg, "/") && strings.HasPrefix(path, w.pkg)) && slices.Contains(w.methods, fn.Name()) {
			recv := "?"
			if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil {
				t := sig.Recv().Type()
				if p, ok := t.(*types.Pointer); ok {
					t = p.Elem()
				}
				if n, ok := t.(*types.Named); ok {
					recv = n.Obj().Name()
				}
			}
			return recv + "." + fn.Name()
		}
	}
	return ""
}

// listedPackage is what `go list -export -json` says of a package, as far as this test reads it.
type listedPackage struct {
	ImportPath string
	Dir        string
	Export     string
	GoFiles    []string
	Standard   bool
}

// webserverWrites type-checks every webserver package (its non-test files, against the
// compiler's export data of its dependencies) and returns each API-server write call as
// "file:line: package calls Type.Method", with its package and method.
func webserverWrites(t *testing.T) []foundWrite {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command("go", "list", "-export", "-deps", "-json", module+"/webserver/...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	var listed []listedPackage
	exports := map[string]string{}
	for dec := json.NewDecoder(strings.NewReader(string(out))); dec.More(); {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list: %v", err)
		}
		exports[p.ImportPath] = p.Export
		if p.ImportPath == module+"/webserver" || strings.HasPrefix(p.ImportPath, module+"/webserver/") {
			listed = append(listed, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, os.ErrNotExist
		}
		return os.Open(exports[path])
	})
	var found []foundWrite
	for _, p := range listed {
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
		if _, err := (&types.Config{Importer: imp}).Check(p.ImportPath, fset, files, info); err != nil {
			t.Fatalf("type-checking %s: %v", p.ImportPath, err)
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				fn, ok := info.Uses[sel.Sel].(*types.Func)
				if !ok {
					return true
				}
				if name := writeCall(fn); name != "" {
					pos := fset.Position(call.Pos())
					rel, _ := filepath.Rel(repoRoot(t), pos.Filename)
					found = append(found, foundWrite{pkg: p.ImportPath, method: name, at: rel + ":" + strconv.Itoa(pos.Line)})
				}
				return true
			})
		}
	}
	return found
}

type foundWrite struct{ pkg, method, at string }

// repoRoot is the module's root: this test runs in test/architecture.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, "..", "..")
}

// TestAPIServerWritesInOnePlace: every create, update, patch, apply and delete the web
// server sends the API server (registrations, their status, Secrets, Events) is made in
// writePackage, so there is one place that says which field manager owns what.
func TestAPIServerWritesInOnePlace(t *testing.T) {
	found := webserverWrites(t)
	inWrites, excused := 0, map[string]bool{}
	for _, w := range found {
		switch {
		case w.pkg == writePackage:
			inWrites++
		case writeExceptions[w.pkg][w.method] != "":
			excused[w.pkg+" "+w.method] = true
		default:
			t.Errorf("%s: %s calls %s: API-server writes of the web server belong in %s", w.at, w.pkg, w.method, writePackage)
		}
	}
	// The scan must see the writes it guards, or it proves nothing.
	if inWrites == 0 {
		t.Errorf("no API-server write found in %s: the scan is broken, or the package moved", writePackage)
	}
	for pkg, methods := range writeExceptions {
		for m := range methods {
			if !excused[pkg+" "+m] {
				t.Errorf("writeExceptions lists %s calling %s, which it no longer does: remove the exception", pkg, m)
			}
		}
	}
}
