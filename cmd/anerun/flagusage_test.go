package main

import (
	"strings"
	"testing"

	"github.com/anepack/anepack/internal/clidoc"
	"github.com/anepack/anepack/runtime/kernels"
)

// sameOnEveryMachine sets what help text must not depend on to values of this test alone and
// returns them: a flag default taken from the environment or the home folder would show them
// in --help.
func sameOnEveryMachine(t *testing.T) []string {
	vals := map[string]string{isaEnv: "isa-from-the-environment", apiKeyEnv: "sk-from-the-environment",
		"HOME": t.TempDir(), "XDG_CACHE_HOME": t.TempDir(), "ANEPACK_HOME": t.TempDir(), "HF_HOME": t.TempDir()}
	var out []string
	for k, v := range vals {
		t.Setenv(k, v)
		out = append(out, v)
	}
	return out
}

// TestFlagUsages walks every flag of anerun: no usage has backticks that --help would show as
// the flag's type, none states a default pflag prints as well, and --isa names the levels of
// this build.
func TestFlagUsages(t *testing.T) {
	sameOnEveryMachine(t)
	root := newRootCmd()
	for _, p := range clidoc.Lint(root) {
		t.Error(p)
	}
	if u := root.PersistentFlags().Lookup("isa").Usage; !strings.Contains(u, strings.Join(kernels.ISALevels(), ", ")) {
		t.Errorf("--isa's usage does not list this build's levels (%v): %s", kernels.ISALevels(), u)
	}
}
