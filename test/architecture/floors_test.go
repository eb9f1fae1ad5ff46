package architecture

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// floors are webserver/'s floors, bottom up; a package's floor is its folder under
// webserver/ (the root package is the router). A package imports only packages of floors
// below its own, or of its own floor, except handlers: a handler package never imports
// another (what two handler groups share lives on a floor below them).
var floors = []string{"protocol", "clients", "stores", "handlers", "router"}

// floorExceptions are imports that break the floor rule on purpose, each with its reason
// (importer → imported → reason). Empty is the goal.
var floorExceptions = map[string]map[string]string{}

// goPackage is what `go list -json` says of a package, as far as these rules read it.
type goPackage struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// packages lists every package of the module with its direct imports, tests' included.
func packages(t *testing.T) []goPackage {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var all []goPackage
	for dec := json.NewDecoder(strings.NewReader(string(out))); dec.More(); {
		var p goPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list: %v", err)
		}
		all = append(all, p)
	}
	return all
}

// floorOf returns the floor of a webserver package and its index in floors; ok is false for
// a package outside webserver/.
func floorOf(pkg string) (name string, level int, ok bool) {
	rest, ok := strings.CutPrefix(pkg, module+"/webserver")
	if !ok || (rest != "" && rest[0] != '/') {
		return "", 0, false
	}
	if rest == "" {
		return "router", len(floors) - 1, true
	}
	name, _, _ = strings.Cut(rest[1:], "/")
	for i, f := range floors {
		if f == name {
			return name, i, true
		}
	}
	return name, -1, true
}

func TestWebserverFloors(t *testing.T) {
	for _, p := range packages(t) {
		from, level, ok := floorOf(p.ImportPath)
		if !ok {
			continue
		}
		if level < 0 {
			t.Errorf("%s is on no floor: put it under webserver/{%s}", p.ImportPath, strings.Join(floors[:len(floors)-1], ","))
			continue
		}
		imports := append(append(append([]string{}, p.Imports...), p.TestImports...), p.XTestImports...)
		for _, d := range imports {
			to, dlevel, ok := floorOf(d)
			if !ok || d == p.ImportPath || floorExceptions[p.ImportPath][d] != "" {
				continue
			}
			switch {
			case dlevel > level:
				t.Errorf("%s (%s) imports %s (%s): a floor imports only the floors below it", p.ImportPath, from, d, to)
			case from == "handlers" && to == "handlers":
				t.Errorf("%s imports %s: a handler package never imports another; move what both need to a floor below", p.ImportPath, d)
			}
		}
	}
}
