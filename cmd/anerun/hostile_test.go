package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// bombConfig is a model of a few MB whose KV cache is huge: one KV head of head_dim 16384 caches
// 128 KiB a token in each of its 16 layers, 8 GiB at the default context of 4096 tokens.
const bombConfig = `{"architectures":["Qwen2ForCausalLM"],"hidden_size":2,"intermediate_size":2,
"num_hidden_layers":16,"num_attention_heads":1,"num_key_value_heads":1,"head_dim":16384,
"vocab_size":151936,"max_position_embeddings":8388608,"rms_norm_eps":1e-06,"rope_theta":10000.0,
"tie_word_embeddings":true}`

// TestKVCacheBomb runs anerun, and anerun serve, on that model under a 4 GiB address-space limit
// (ulimit -v), and once without a limit at a context of 2^23 tokens (16 TiB): each used to die
// with "fatal error: runtime: out of memory" and a goroutine dump. Now each refuses at start,
// naming the sizes and the --ctx that fits; and that context works.
func TestKVCacheBomb(t *testing.T) {
	path, err := testmodel.Build([]byte(bombConfig), 5, "kv-bomb", "f16")
	if err != nil {
		t.Fatal(err)
	}
	limited := func(args ...string) []string {
		return append([]string{"sh", "-c", `ulimit -v 4194304 && exec "$0" "$@"`, anerunBin}, args...)
	}
	fitRe := regexp.MustCompile(`lower --ctx to (\d+) tokens or fewer`)
	for _, cmd := range [][]string{
		limited(path, "--raw", "Hello", "--max-tokens", "2", "--threads", "1"),
		limited("serve", path, "--addr", "127.0.0.1:0", "--threads", "1"),
		{anerunBin, path, "--raw", "Hello", "--max-tokens", "2", "--threads", "1", "--ctx", "8388608"},
	} {
		r := runCmd(t, cmd...)
		if r.code == 0 || !strings.Contains(r.stderr, "for its KV cache (16 attention layers of 1 KV heads × head_dim 16384") || !fitRe.MatchString(r.stderr) {
			t.Fatalf("%q: exit %d, stderr:\n%s\nwant a refusal naming the cache's size and the --ctx that fits", cmd, r.code, r.stderr)
		}
		if cmd[0] == "sh" && !strings.Contains(r.stderr, "RLIMIT_AS (ulimit -v)") {
			t.Errorf("%q: the error does not name the limit:\n%s", cmd, r.stderr)
		}
	}
	r := runCmd(t, limited(path, "--raw", "Hello", "--max-tokens", "2", "--threads", "1", "--ctx", "256")...)
	if r.code != 0 {
		t.Fatalf("a context of 256 tokens under the limit: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// runCmd runs a command (anerun, or a shell that runs it), failing the test if it crashed.
func runCmd(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%q: %v", args, err)
	}
	if strings.Contains(r.stderr, "fatal error") || strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine ") {
		t.Fatalf("%q crashed:\n%s", args, r.stderr)
	}
	return r
}

// TestReimportAndRemove imports one bundle file twice and removes it: the second import used to
// leave a tmp/import-* hard link in the store, and `anerun rm` reported "freed 36.6 MiB" while
// the bytes stayed (that link, and the imported file itself, hold them). Now the work area is
// left empty and rm says the bytes stay on disk; once the file is gone, rm frees them.
func TestReimportAndRemove(t *testing.T) {
	home := t.TempDir()
	t.Setenv("ANEPACK_HOME", home)
	data, err := os.ReadFile(bundle(t))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "tiny.aneb")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r := anerun(t, "", "import", file, "--name", "tiny", "-q"); r.code != 0 {
			t.Fatalf("import: exit %d: %s", r.code, r.stderr)
		}
	}
	tmp, _ := os.ReadDir(filepath.Join(home, "tmp"))
	for _, e := range tmp {
		if strings.HasPrefix(e.Name(), "import-") {
			t.Fatalf("importing the file again left %s in the store's work area", e.Name())
		}
	}
	r := anerun(t, "", "rm", "tiny")
	if r.code != 0 || strings.Contains(r.stdout, "freed") || !strings.Contains(r.stdout, "stays on disk: another hard link holds it") {
		t.Fatalf("rm of an imported bundle whose file is still there: exit %d, stdout:\n%s", r.code, r.stdout)
	}
	if r := anerun(t, "", "import", file, "--name", "tiny", "-q"); r.code != 0 {
		t.Fatalf("import: exit %d: %s", r.code, r.stderr)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	r = anerun(t, "", "rm", "tiny")
	if r.code != 0 || !strings.Contains(r.stdout, "freed ") || strings.Contains(r.stdout, "stays on disk") {
		t.Fatalf("rm of a bundle the store alone holds: exit %d, stdout:\n%s", r.code, r.stdout)
	}
}

// TestTemplateErrorEscaped renders the chat template of a bundle whose template raises an
// exception full of terminal control sequences (window title, clear screen, a carriage return
// and a fake line): anerun used to print the message raw on stderr. Now it is escaped, and its
// second line indented.
func TestTemplateErrorEscaped(t *testing.T) {
	files, err := testmodel.TokenizerFiles("qwen")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(files["tokenizer_config.json"], &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["chat_template"] = "{{ raise_exception(\"\x1b]0;pwned\x07\x1b[2J\ranerun: all is well\") }}"
	if files["tokenizer_config.json"], err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join("..", "..", "configs", "qwen2-tiny.json"))
	if err != nil {
		t.Fatal(err)
	}
	path, err := testmodel.BuildWith(config, 1, "escaping-template", "f16", files)
	if err != nil {
		t.Fatal(err)
	}
	r := anerun(t, `{"messages":[{"role":"user","content":"hi"}]}`, "template", path)
	// (The template engine reads the carriage return as a newline, as jinja2 does.)
	if r.code == 0 || strings.ContainsAny(r.stderr, "\x1b\x07\r") || strings.Contains(r.stderr, "\nanerun: all is well") ||
		!strings.Contains(r.stderr, `\x1b]0;pwned\x07\x1b[2J`) {
		t.Fatalf("exit %d, stderr %q; want the template's message with its control characters escaped", r.code, r.stderr)
	}
}
