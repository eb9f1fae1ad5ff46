package architecture

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// layoutPaths reads the tree in README.md's Layout section: each line's name column (up to
// the first run of two spaces) holds one or more names; a name ending in "/" is a folder,
// placed under the nearest less indented folder above it.
func layoutPaths(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no ## Layout section")
	}
	_, tree, opened := strings.Cut(section, "```\n")
	if tree, _, ok = strings.Cut(tree, "```\n"); !opened || !ok {
		t.Fatal("README.md's Layout section has no tree in a code block")
	}
	type folder struct {
		indent int
		path   string
	}
	var stack []folder
	var paths []string
	for _, line := range strings.Split(tree, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		names, _, _ := strings.Cut(trimmed, "  ")
		if names == "" || !strings.HasSuffix(strings.Fields(names)[0], "/") {
			continue // a description's continuation, or a file such as main.go
		}
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		parent := ""
		if len(stack) > 0 {
			parent = stack[len(stack)-1].path
		}
		fields := strings.Fields(names)
		for _, name := range fields {
			if !strings.HasSuffix(name, "/") {
				t.Errorf("README.md Layout: %q on the line %q is not a folder (end it with /)", name, strings.TrimSpace(line))
				continue
			}
			paths = append(paths, parent+name)
		}
		if len(fields) == 1 {
			stack = append(stack, folder{indent, parent + fields[0]})
		}
	}
	return paths
}

// The tree in README.md names every package `go list ./...` prints, and every folder it names
// exists: a package added, moved or removed shows up here until README says so.
func TestReadmeLayoutNamesEveryPackage(t *testing.T) {
	paths := layoutPaths(t)
	out, err := exec.Command("go", "list", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(pkg, module+"/")
		if !ok {
			continue // the root package: main.go
		}
		if !slices.Contains(paths, rel+"/") {
			t.Errorf("README.md Layout does not name the package %s/", rel)
		}
	}
	for _, p := range paths {
		if fi, err := os.Stat("../../" + p); err != nil || !fi.IsDir() {
			t.Errorf("README.md Layout names %s, which is not a folder of the repository", p)
		}
	}
}
