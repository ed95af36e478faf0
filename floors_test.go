package anepack_test

import (
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// module is the import path of the repository's root.
const module = "github.com/anepack/anepack"

// floors places every package of the module on a floor, lowest first. A package imports only
// packages on floors below its own: nothing runs sideways or upward, so a package can be read,
// tested and reused knowing only what is under it. A new package gets the floor just above
// the highest one it imports.
var floors = []struct {
	what string
	pkgs []string
}{
	{"helpers that import nothing of anepack", []string{
		"internal/affinity", "internal/bytesize", "internal/regfile", "internal/stall",
		"internal/version", "internal/clidoc", "internal/sttest", "internal/testtok", "internal/qwentok",
		"hub/hubtest", "tokenizer/internal/jinja", "serve/internal/schemacheck",
		"bench/internal/gguf", "bench/loadgen",
	}},
	{"helpers on helpers, and the terminal", []string{
		"internal/fileutil", "internal/transfer", "internal/cli", "internal/sysmem",
	}},
	{"leaves: one job each, on helpers only", []string{
		"arch", "dtype", "half", "blobfile", "format", "tokenizer", "hub", "store", "serve/grammar",
	}},
	{"what packing and running are made of, and the names and transfers of bundles", []string{
		"blobplan", "convert", "mil", "quant", "runtime/kernels", "synth", "serve/toolcall",
		"remote", "internal/modelname",
	}},
	{"ANE program generation and the shared runtime", []string{
		"milgen", "runtime", "runtime/ane/internal/dispatch", "bench/mkgguf",
	}},
	{"packing, the CPU backend and the server", []string{
		"pack", "runtime/cpu", "serve",
	}},
	{"the ANE backend, filling the store, test models", []string{
		"runtime/ane", "internal/acquire", "runtime/testmodel",
	}},
	{"the choice of backend", []string{
		"runtime/backend",
	}},
	{"the commands", []string{
		"cmd/anepack", "cmd/anerun",
	}},
}

// terminal is the package that draws on a terminal. Only the commands use it: a package below
// them reports through an interface or an io.Writer the command fills in, so a program that
// uses it as a library decides what its users see.
const terminal = "internal/cli"

// contexts are the builds whose imports count: the platforms anepack is built for, and the
// build without assembly.
var contexts = []struct {
	goos, goarch string
	tags         []string
}{
	{"linux", "amd64", nil},
	{"linux", "arm64", nil},
	{"darwin", "arm64", nil},
	{"darwin", "amd64", nil},
	{"linux", "amd64", []string{"noasm"}},
}

// pkg is what a package imports from the module, in any of the contexts, and what it says it
// is.
type pkg struct {
	name, doc   string   // the package name and the synopsis of its doc comment
	imports     []string // by the package's own files
	testImports []string // by its _test.go files (in the package or in package x_test)
}

// modulePackages finds every package of the module under root (not nested modules, testdata
// or hidden folders), keyed by its path relative to the module ("runtime/cpu"; "." for the
// root).
func modulePackages(root string) (map[string]*pkg, error) {
	pkgs := map[string]*pkg{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if path != root {
			if name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own (the assembly generators)
			}
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		for _, c := range contexts {
			ctx := build.Default
			ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled, ctx.BuildTags = c.goos, c.goarch, false, c.tags
			bp, err := ctx.ImportDir(path, 0)
			var noGo *build.NoGoError
			if errors.As(err, &noGo) {
				continue
			}
			if err != nil {
				return fmt.Errorf("%s (%s/%s): %w", rel, c.goos, c.goarch, err)
			}
			p := pkgs[rel]
			if p == nil {
				p = &pkg{}
				pkgs[rel] = p
			}
			p.name, p.doc = bp.Name, bp.Doc
			p.imports = addOwn(p.imports, bp.Imports)
			p.testImports = addOwn(p.testImports, bp.TestImports)
			p.testImports = addOwn(p.testImports, bp.XTestImports)
		}
		return nil
	})
	return pkgs, err
}

// addOwn adds to list the imports of the module's own packages, as paths relative to it.
func addOwn(list, imports []string) []string {
	for _, imp := range imports {
		rel, ok := strings.CutPrefix(imp, module+"/")
		if ok && !slices.Contains(list, rel) {
			list = append(list, rel)
		}
	}
	return list
}

// checkFloors returns one line for every rule the packages break: a package without a floor, a
// floor naming a package that does not exist, an import that does not run downward, and an
// import of the terminal package from below the commands.
func checkFloors(pkgs map[string]*pkg) []string {
	floor := map[string]int{}
	var problems []string
	for i, f := range floors {
		for _, p := range f.pkgs {
			if _, dup := floor[p]; dup {
				problems = append(problems, fmt.Sprintf("%s is on two floors", p))
			}
			floor[p] = i
			if pkgs[p] == nil {
				problems = append(problems, fmt.Sprintf("floor %d (%s) names %s, which is not a package of the module", i, f.what, p))
			}
		}
	}
	names := make([]string, 0, len(pkgs))
	for name := range pkgs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if name == "." {
			continue // this test
		}
		p := pkgs[name]
		fl, placed := floor[name]
		if !placed {
			imports := "nothing of anepack: floor 0"
			if len(p.imports) > 0 {
				imports = strings.Join(p.imports, ", ")
			}
			problems = append(problems, fmt.Sprintf("%s has no floor: add it to floors in floors_test.go, on the floor above the highest package it imports (%s)",
				name, imports))
			continue
		}
		for _, imp := range p.imports {
			if fi, ok := floor[imp]; ok && fi >= fl {
				problems = append(problems, fmt.Sprintf("%s (floor %d, %s) imports %s (floor %d, %s): imports must run downward",
					name, fl, floors[fl].what, imp, fi, floors[fi].what))
			}
		}
		if !isCommand(name) && name != terminal {
			for _, imp := range append(slices.Clone(p.imports), p.testImports...) {
				if imp == terminal {
					problems = append(problems, fmt.Sprintf("%s imports %s: only the commands (cmd/...) draw on the terminal; take an interface or an io.Writer instead", name, terminal))
					break
				}
			}
		}
	}
	return problems
}

func isCommand(name string) bool { return strings.HasPrefix(name, "cmd/") }

// TestFloors holds the module to its floors: every import runs downward, and only the
// commands import the terminal package.
func TestFloors(t *testing.T) {
	pkgs, err := modulePackages(".")
	if err != nil {
		t.Fatal(err)
	}
	if pkgs["runtime"] == nil || pkgs["cmd/anerun"] == nil {
		t.Fatalf("found %d packages, without runtime or cmd/anerun: the walk is not at the module's root", len(pkgs))
	}
	for _, p := range checkFloors(pkgs) {
		t.Error(p)
	}
}

// TestFloorsRefuse feeds checkFloors the module's packages with one upward import, one import
// of the terminal package from a library and one package without a floor, and expects each to
// be reported.
func TestFloorsRefuse(t *testing.T) {
	pkgs, err := modulePackages(".")
	if err != nil {
		t.Fatal(err)
	}
	pkgs["hub"].imports = append(pkgs["hub"].imports, "pack")
	pkgs["store"].testImports = append(pkgs["store"].testImports, terminal)
	pkgs["newpkg"] = &pkg{imports: []string{"format"}}
	got := strings.Join(checkFloors(pkgs), "\n")
	for _, want := range []string{
		"hub (floor 2, leaves: one job each, on helpers only) imports pack (floor 5,",
		"store imports internal/cli: only the commands",
		"newpkg has no floor",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("checkFloors did not report %q; it said:\n%s", want, got)
		}
	}
}
