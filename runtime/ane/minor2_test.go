package ane

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/testmodel"
)

// TestMinor2Bundle: a bundle of format version 1.2, whose manifest lists its ANE programs under
// the key "kernels", still runs: the sim gives the logits of the same bundle written today
// (key "programs"), bit for bit.
func TestMinor2Bundle(t *testing.T) {
	src := testmodel.Bundle(t, "qwen2-tiny", "f16")
	old := filepath.Join(t.TempDir(), "minor2.aneb")
	if err := testmodel.WriteMinor2(src, old); err != nil {
		t.Fatal(err)
	}
	ob, err := format.Open(old)
	if err != nil {
		t.Fatal(err)
	}
	h := ob.Header()
	ob.Close()
	data, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	man := data[h.ManifestOffset:]
	if h.Minor != 2 || !bytes.Contains(man, []byte(`"kernels": [`)) || bytes.Contains(man, []byte(`"programs"`)) {
		t.Fatalf("%s is not a 1.2 bundle with its programs under \"kernels\"", old)
	}
	run := func(path string) (version string, programs int, logits []float32) {
		t.Helper()
		m, err := runtime.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		b, err := New(m, Options{Eval: EvalSim, Threads: 2})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer b.Close()
		st, err := b.NewState(32)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		logits = make([]float32, m.Config.VocabSize)
		if err := st.Forward(prompt(t, 10), 0, logits); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return m.Manifest().FormatVersion, len(m.Manifest().Programs), logits
	}
	newVersion, newPrograms, want := run(src)
	oldVersion, oldPrograms, got := run(old)
	if oldVersion != "1.2" || newVersion == "1.2" {
		t.Errorf("format versions %q (old) and %q (new)", oldVersion, newVersion)
	}
	if oldPrograms != newPrograms || oldPrograms == 0 {
		t.Errorf("the 1.2 bundle lists %d programs; the bundle written today %d", oldPrograms, newPrograms)
	}
	if !slices.Equal(got, want) {
		t.Error("the 1.2 bundle's logits differ from those of the bundle written today")
	}
}
