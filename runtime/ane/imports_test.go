package ane

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNoGenerator: the backend runs what a bundle holds and knows nothing of how it was
// made, so neither it nor its internal packages import the generator (milgen) or the packer
// (pack); what both sides must agree on, such as the decode bucket, lives in package format.
func TestImportsNoGenerator(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	internal, err := filepath.Glob(filepath.Join("internal", "*", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range append(files, internal...) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range ast.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			switch path {
			case "github.com/anepack/anepack/milgen", "github.com/anepack/anepack/pack":
				t.Errorf("%s imports %s", f, path)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d files; expected the package's sources", checked)
	}
}
