package main

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anepack/anepack/internal/clidoc"
)

// updateDocs makes TestCLIReference write the reference instead of checking it (go generate).
var updateDocs = flag.Bool("update-docs", false, "rewrite docs/cli from the commands instead of comparing")

// cliDocs is the folder of the command-line reference.
var cliDocs = filepath.Join("..", "..", "docs", "cli")

// TestCLIReference fails when docs/cli differs from what the commands' help says; with
// -update-docs (go generate ./cmd/...) it rewrites the pages instead. The pages must not show
// the environment.
func TestCLIReference(t *testing.T) {
	env := sameOnEveryMachine(t)
	pages, err := clidoc.Pages(newRootCmd())
	if err != nil {
		t.Fatal(err)
	}
	for name, page := range pages {
		for _, v := range env {
			if strings.Contains(string(page), v) {
				t.Fatalf("%s shows %q, a value of this machine's environment: a flag takes its default from there", name, v)
			}
		}
	}
	if *updateDocs {
		if err := clidoc.Generate(newRootCmd(), cliDocs); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := clidoc.Check(newRootCmd(), cliDocs); err != nil {
		t.Fatal(err)
	}
}
