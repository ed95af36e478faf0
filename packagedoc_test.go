package anepack_test

import (
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestPackageDocs: every package says what it is for in a doc comment that `go doc` shows, and
// a package at the top of the tree, like each command, keeps that comment in doc.go, the one
// file of the package that carries it, where a reader looks first.
func TestPackageDocs(t *testing.T) {
	pkgs, err := modulePackages(".")
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(pkgs))
	for name := range pkgs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := pkgs[name]
		if name == "." {
			continue // these tests
		}
		want := "Package " + p.name + " "
		if p.name == "main" {
			want = "Command " + path.Base(name) + " "
		}
		if !strings.HasPrefix(p.doc, want) {
			t.Errorf("%s: the package doc starts %q; want a sentence starting %q that says what it is for", name, p.doc, want)
		}
		if strings.Contains(name, "/") && !strings.HasPrefix(name, "cmd/") {
			continue
		}
		docFiles, err := packageDocFiles(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(docFiles) != 1 || docFiles[0] != "doc.go" {
			t.Errorf("%s: the package doc is in %v; want it in doc.go only", name, docFiles)
		}
	}
}

// packageDocFiles lists the files of the package in dir (tests left out) that carry a package
// doc comment.
func packageDocFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	fset := token.NewFileSet()
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return nil, err
		}
		if f.Doc != nil {
			files = append(files, n)
		}
	}
	return files, nil
}
