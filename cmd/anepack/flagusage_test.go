package main

import (
	"testing"

	"github.com/anepack/anepack/internal/clidoc"
)

// sameOnEveryMachine sets what help text must not depend on to values of this test alone and
// returns them: a flag default taken from the environment or the home folder would show them
// in --help.
func sameOnEveryMachine(t *testing.T) []string {
	vals := map[string]string{"HF_TOKEN": "hf_from_the_environment", "HF_HUB_OFFLINE": "1",
		"HOME": t.TempDir(), "XDG_CACHE_HOME": t.TempDir(), "ANEPACK_HOME": t.TempDir(), "HF_HOME": t.TempDir()}
	var out []string
	for k, v := range vals {
		t.Setenv(k, v)
		if v != "1" {
			out = append(out, v)
		}
	}
	return out
}

// TestFlagUsages walks every flag of anepack: no usage has backticks that --help would show as
// the flag's type, and none states a default pflag prints as well.
func TestFlagUsages(t *testing.T) {
	sameOnEveryMachine(t)
	for _, p := range clidoc.Lint(newRootCmd()) {
		t.Error(p)
	}
}
