package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/runtime/testmodel"
)

// TestInvalidGenerationConfig runs a bundle whose generation defaults are out of range (made by
// editing the manifest; anepack refuses such a generation_config.json). anerun used to say
// "temperature -1: expected a number >= 0", as if the user had given --temperature, and
// `anerun serve` started and failed every request with that message as the client's error.
// Now both name the bundle and the field, and serve refuses to start.
func TestInvalidGenerationConfig(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "badgen.aneb")
	if err := testmodel.Rewrite(bundle(t), bad, func(m *format.Manifest) {
		yes, temp := true, -1.0
		m.Generation.DoSample, m.Generation.Temperature = &yes, &temp
	}); err != nil {
		t.Fatal(err)
	}
	want := bad + `: the bundle's generation config is invalid: field "temperature": -1; expected a number >= 0`
	for _, args := range [][]string{
		{bad, "hi"},
		{bad, "hi", "--top-k", "3"},
		{"serve", bad, "--addr", "127.0.0.1:0", "--threads", "1", "--ctx", "64"},
	} {
		r := anerun(t, "", args...)
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("anerun %q: exit %d, stderr %q; want %q", args, r.code, r.stderr, want)
		}
		if strings.Contains(r.stderr, "--temperature") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("anerun %q: stderr %q is not one line about the bundle", args, r.stderr)
		}
	}
}
