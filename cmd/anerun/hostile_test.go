package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/anepack/anepack/runtime/testmodel"
)

// TestQ4GroupRefused runs anerun on a q4 bundle whose group size (16) divides every row but is
// none of the kernels' (32, 64, 128), with scales and offsets sized to match: the process used
// to open it and die of the first product's panic (`anerun serve` on its first request). Both
// must refuse the bundle at start with an error naming the field and what was expected.
func TestQ4GroupRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "group16.aneb")
	if err := testmodel.Regroup(testmodel.Bundle(t, "qwen2-tiny", "int4"), path, 16); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{path, "--raw", "Hello", "--max-tokens", "2", "--threads", "2"},
		{"serve", path, "--addr", "127.0.0.1:0", "--threads", "1", "--ctx", "256"},
	} {
		r := anerun(t, "", args...)
		if r.code == 0 || !strings.Contains(r.stderr, "group_size 16; expected 32, 64 or 128") || !strings.Contains(r.stderr, path) {
			t.Errorf("anerun %q: exit %d, stderr:\n%s\nwant a failure naming the bundle and group_size", args, r.code, r.stderr)
		}
	}
}
