package modelname

import (
	"strings"
	"testing"

	"github.com/anepack/anepack/format"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in, dtype string
		want      string // "" with ok false: not a name
		err       string
	}{
		{"Qwen/Qwen2.5-0.5B-Instruct", "", "Qwen/Qwen2.5-0.5B-Instruct:f16", ""},
		{"Qwen/Qwen2.5-0.5B-Instruct:int4", "", "Qwen/Qwen2.5-0.5B-Instruct:int4", ""},
		{"Qwen/Qwen2.5-0.5B-Instruct", "int8", "Qwen/Qwen2.5-0.5B-Instruct:int8", ""},
		{"Qwen/Qwen2.5-0.5B-Instruct:Q4", "int4", "Qwen/Qwen2.5-0.5B-Instruct:int4", ""},
		{"qwen2-tiny", "", "qwen2-tiny:f16", ""},
		{"qwen2-tiny:fp32", "", "qwen2-tiny:f32", ""},
		{"Org/M:q5", "", "", `unknown tag "q5"`},
		{"Org/M:f16", "f32", "", "name different variants"},
		{"Org/M", "bf16", "", `--dtype "bf16"`},
		{"qwen.aneb", "", "", ""},
		{"models/qwen.gguf", "", "", ""},
		{"./qwen", "", "", ""},
		{"/abs/qwen", "", "", ""},
		{"a/b/c", "", "", ""},
		{"Org/../x", "", "", ""},
	} {
		n, ok, err := Parse(c.in, c.dtype)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Parse(%q, %q): %v; want an error with %q", c.in, c.dtype, err, c.err)
			}
		case c.want == "":
			if ok || err != nil {
				t.Errorf("Parse(%q): %v, %v, %v; want not a name", c.in, n, ok, err)
			}
		case err != nil || !ok || n.String() != c.want:
			t.Errorf("Parse(%q, %q) = %v, %v, %v; want %s", c.in, c.dtype, n, ok, err, c.want)
		}
	}
}

// TestForBundle: a bundle packed from the Hub is named after its repo (so `anerun Org/Name` finds
// what `anepack Org/Name` then `anerun import` stored), a local one after its model name.
func TestForBundle(t *testing.T) {
	m := &format.Manifest{}
	m.Model.Name, m.Model.DType = "Qwen2.5-0.5B-Instruct", "f16"
	m.Provenance = format.Provenance{Source: "hf", Repo: "Qwen/Qwen2.5-0.5B-Instruct"}
	if n, err := ForBundle(m); err != nil || n.String() != "Qwen/Qwen2.5-0.5B-Instruct:f16" {
		t.Errorf("hub bundle: %v, %v", n, err)
	}
	m.Provenance = format.Provenance{Source: "local"}
	m.Model.Name, m.Model.DType = "my model (v2)", "q4"
	if n, err := ForBundle(m); err != nil || n.String() != "my-model--v2:int4" {
		t.Errorf("local bundle: %v, %v", n, err)
	}
	m.Model.DType = "bf16"
	if _, err := ForBundle(m); err == nil {
		t.Errorf("a weight type without a tag was named")
	}
}
