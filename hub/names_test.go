package hub

import (
	"errors"
	"testing"
)

func TestIsRepoID(t *testing.T) {
	for s, want := range map[string]bool{
		"Qwen/Qwen2.5-0.5B-Instruct": true,
		"mlx-community/Qwen2.5_0.5B": true,
		"a/b":                        true,
		"gpt2":                       false, // legacy single names are ambiguous with a local dir
		"./Qwen/Qwen2.5":             false,
		"/abs/path":                  false,
		"../x":                       false,
		"Org/Name/extra":             false,
		"Org/":                       false,
		"/Name":                      false,
		"Org/Na--me":                 false,
		"Org/Na..me":                 false,
		"Org/name.":                  false,
		"Org/-name":                  false,
		"Org/na me":                  false,
		"Org/model.aneb":             true, // shape only: callers check the file system first
	} {
		if got := IsRepoID(s); got != want {
			t.Errorf("IsRepoID(%q) = %v, want %v", s, got, want)
		}
	}
	if long := "Org/" + string(make([]byte, 100)); IsRepoID(long) {
		t.Error("an id longer than 96 characters was accepted")
	}
}

func TestCheckRepoPath(t *testing.T) {
	for _, p := range []string{"config.json", "onnx/model.onnx", "a/b/c.safetensors", ".gitattributes"} {
		if err := checkRepoPath(p); err != nil {
			t.Errorf("checkRepoPath(%q): %v", p, err)
		}
	}
	for _, p := range []string{"../../etc/passwd", "/etc/passwd", "a/../b", "a//b", "./a", "a/.", `a\b`, "", "a\x00b", "C:/x", "a/"} {
		err := checkRepoPath(p)
		if !errors.Is(err, ErrUnsafePath) {
			t.Errorf("checkRepoPath(%q) = %v, want ErrUnsafePath", p, err)
		}
	}
}

func TestCheckRevision(t *testing.T) {
	for _, r := range []string{"main", "v1.0", "refs/pr/1", "0123456789abcdef0123456789abcdef01234567"} {
		if err := checkRevision(r); err != nil {
			t.Errorf("checkRevision(%q): %v", r, err)
		}
	}
	for _, r := range []string{"", "../main", "a/../../b", "/main", "main/", `a\b`, "a\nb"} {
		if checkRevision(r) == nil {
			t.Errorf("checkRevision(%q) accepted", r)
		}
	}
}

func TestPackFilter(t *testing.T) {
	keep := map[string]bool{}
	for _, n := range packNames {
		keep[n] = true
	}
	for _, f := range modelFiles() {
		if got := PackFilter(f.Path); got != keep[f.Path] {
			t.Errorf("PackFilter(%q) = %v, want %v", f.Path, got, keep[f.Path])
		}
	}
	for p, want := range map[string]bool{
		"model.safetensors":              true,
		"chat_template.jinja":            true,
		"consolidated.safetensors":       false,
		"pytorch_model-00001-of-2.bin":   false,
		"model.pth":                      false,
		"model.onnx":                     false,
		"model-q4.gguf":                  false,
		"original/model.safetensors":     false,
		"tokenizer.model":                false,
		"sub/config.json":                false,
		"flax_model.msgpack":             false,
		"model.safetensors.index.json.x": false,
	} {
		if got := PackFilter(p); got != want {
			t.Errorf("PackFilter(%q) = %v, want %v", p, got, want)
		}
	}
}
