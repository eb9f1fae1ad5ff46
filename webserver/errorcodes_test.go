package webserver

import (
	"encoding/json"
	"fmt"
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

// errorCodeShape is what a stable error code looks like (details.message).
var errorCodeShape = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$`)

// The document's enum of details.message is where a typed client learns the codes.
const errorCodeEnumPath = "components.schemas.Error.properties.details.properties.message.enum"

// sourceErrorCodes collects, from the non-test Go files under dirs, every code the server
// can answer with, written one of the three ways the code base writes them: a constant
// named Code… (httpapi.CodeNotFound, lti11.CodeUnknownConsumerKey…), a literal Code: "X" in
// an error literal, or a literal second argument of an …Errorf(status, "X", …) call. The
// value is where the code is first written.
func sourceErrorCodes(t *testing.T, dirs ...string) map[string]string {
	t.Helper()
	codes := map[string]string{}
	note := func(fset *token.FileSet, lit ast.Expr, root string) {
		b, ok := lit.(*ast.BasicLit)
		if !ok || b.Kind != token.STRING {
			return
		}
		s, err := strconv.Unquote(b.Value)
		if err != nil || !errorCodeShape.MatchString(s) {
			return
		}
		if _, seen := codes[s]; !seen {
			pos := fset.Position(b.Pos())
			rel, _ := filepath.Rel(root, pos.Filename)
			codes[s] = fmt.Sprintf("%s:%d", filepath.ToSlash(rel), pos.Line)
		}
	}
	for _, dir := range dirs {
		root := filepath.Dir(dir)
		testsource.Inspect(t, func(fset *token.FileSet, n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if strings.HasPrefix(name.Name, "Code") && len(name.Name) > 4 && i < len(n.Values) {
						note(fset, n.Values[i], root)
					}
				}
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Code" {
					note(fset, n.Value, root)
				}
			case *ast.CallExpr:
				var name string
				switch fn := n.Fun.(type) {
				case *ast.SelectorExpr:
					name = fn.Sel.Name
				case *ast.Ident:
					name = fn.Name
				}
				if strings.HasSuffix(name, "Errorf") && len(n.Args) >= 3 {
					note(fset, n.Args[1], root)
				}
			}
			return true
		}, dir)
	}
	return codes
}

func documentErrorCodes(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Components struct {
			Schemas struct {
				Error struct {
					Properties struct {
						Details struct {
							Properties struct {
								Message struct {
									Enum []string `json:"enum"`
								} `json:"message"`
							} `json:"properties"`
						} `json:"details"`
					} `json:"properties"`
				} `json:"Error"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPISource, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Components.Schemas.Error.Properties.Details.Properties.Message.Enum
}

// Every error code the server can answer with is in the document's enum, so a typed client
// decodes it; and the enum names nothing the server cannot send.
func TestOpenAPIListsEveryErrorCode(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(wd)
	// The HTTP error answers are written under webserver/; app/ wires them.
	codes := sourceErrorCodes(t, wd, filepath.Join(root, "app"))
	if len(codes) < 100 {
		t.Fatalf("found only %d codes in the sources: the scan is broken", len(codes))
	}
	listed := documentErrorCodes(t)
	inDoc := map[string]bool{}
	for _, c := range listed {
		if inDoc[c] {
			t.Errorf("webserver/openapi.json %s lists %s twice", errorCodeEnumPath, c)
		}
		inDoc[c] = true
	}
	var missing []string
	for c := range codes {
		if !inDoc[c] {
			missing = append(missing, c)
		}
	}
	slices.Sort(missing)
	for _, c := range missing {
		t.Errorf("error code %s (written at %s) is missing from webserver/openapi.json: add %q to %s", c, codes[c], c, errorCodeEnumPath)
	}
	for _, c := range listed {
		if _, ok := codes[c]; !ok {
			t.Errorf("webserver/openapi.json %s lists %s, which no Go source under webserver/ or app/ answers with: remove it (or, if it is written another way, teach sourceErrorCodes that way)", errorCodeEnumPath, c)
		}
	}
}

// The scan finds each way a code is written, and only codes.
func TestSourceErrorCodesScan(t *testing.T) {
	dir := t.TempDir()
	src := `package x
const CodeAlpha = "ALPHA_CODE"
const NotACode = "NOT_A_CODE"
const StatusNoSecret = "NO_SECRET"
var _ = &Error{Status: 401, Code: "BETA_CODE", Description: "lower case is prose"}
var _ = httpapi.Errorf(404, "GAMMA_CODE", "The THING_X is gone.")
var _ = Errorf(404, "DELTA", "x")
var _ = os.Getenv("LTIOP_PUBLIC_URL")
`
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x_test.go"), []byte("package x\nconst CodeTest = \"TEST_ONLY\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := sourceErrorCodes(t, dir)
	var names []string
	for c := range got {
		names = append(names, c)
	}
	slices.Sort(names)
	if want := []string{"ALPHA_CODE", "BETA_CODE", "DELTA", "GAMMA_CODE"}; !slices.Equal(names, want) {
		t.Errorf("codes = %v, want %v", names, want)
	}
	if !strings.HasSuffix(got["GAMMA_CODE"], "x.go:6") {
		t.Errorf("GAMMA_CODE at %q, want …x.go:6", got["GAMMA_CODE"])
	}
}
