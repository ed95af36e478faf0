package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFlagSpellings runs the binary with the flags people bring from llama.cpp, mlx-lm and
// ollama: --temp, --n-predict and --ctx-size do what --temperature, --max-tokens and --ctx do;
// a mistyped flag gets the nearest one suggested; --version and `anerun version` report the
// build; completion is listed in the help; serve takes --host/--port beside --addr.
func TestFlagSpellings(t *testing.T) {
	path := bundle(t)
	long := anerun(t, "", path, "--raw", "Once upon a time", "--temperature", "1.5", "--seed", "7", "--max-tokens", "5")
	short := anerun(t, "", path, "--raw", "Once upon a time", "--temp", "1.5", "--seed", "7", "--n-predict", "5")
	greedy := anerun(t, "", path, "--raw", "Once upon a time", "--seed", "7", "--max-tokens", "5")
	if long.code != 0 || long.stdout != short.stdout || long.stdout == greedy.stdout {
		t.Errorf("--temp/--n-predict %q, --temperature/--max-tokens %q, greedy %q: want the first two equal and unlike the third", short.stdout, long.stdout, greedy.stdout)
	}
	if r := anerun(t, "", path, "--raw", strings.Repeat("word ", 40), "--ctx-size", "16"); r.code == 0 || !strings.Contains(r.stderr, "context of 16 tokens") {
		t.Errorf("--ctx-size 16: exit %d, stderr %q", r.code, r.stderr)
	}
	// --amx picks where fp16 and int8 prefill runs on an AMX CPU; every mode runs anywhere (the same
	// text), a bad one is refused.
	for _, mode := range []string{"on", "off"} {
		if r := anerun(t, "", path, "--raw", "Once upon a time", "--seed", "7", "--max-tokens", "5", "--amx", mode); r.code != 0 || r.stdout != greedy.stdout {
			t.Errorf("--amx %s: exit %d, %q; want %q", mode, r.code, r.stdout, greedy.stdout)
		}
	}
	if r := anerun(t, "", path, "--raw", "hi", "--amx", "sideways"); r.code == 0 || !strings.Contains(r.stderr, `--amx "sideways": expected auto, on or off`) {
		t.Errorf("--amx sideways: exit %d, stderr %q", r.code, r.stderr)
	}
	// --cache-type f16 (and llama.cpp's --cache-type-v) runs; a type anerun lacks is refused.
	for _, flag := range []string{"--cache-type", "--cache-type-v"} {
		if r := anerun(t, "", path, "--raw", "Once upon a time", "--max-tokens", "5", flag, "f16"); r.code != 0 || r.stdout == "" {
			t.Errorf("%s f16: exit %d, %q, stderr %q", flag, r.code, r.stdout, r.stderr)
		}
	}
	if r := anerun(t, "", path, "--raw", "hi", "--cache-type", "q8_0"); r.code == 0 || !strings.Contains(r.stderr, `--cache-type: KV cache type "q8_0": expected f32 or f16`) {
		t.Errorf("--cache-type q8_0: exit %d, stderr %q", r.code, r.stderr)
	}

	for args, want := range map[string]string{
		"hi --tempreature 1": "unknown flag --tempreature; did you mean --temperature?",
		"hi --max 3":         "unknown flag --max; did you mean --max-tokens?",
		"hi --zzzzzz 3":      "unknown flag --zzzzzz (anerun --help lists the flags)",
	} {
		r := anerun(t, "", append([]string{path}, strings.Fields(args)...)...)
		if r.code == 0 || strings.TrimSpace(r.stderr) != "anerun: "+want {
			t.Errorf("anerun MODEL %s: exit %d, stderr %q; want %q", args, r.code, r.stderr, want)
		}
	}
	if r := anerun(t, "", "serve", path, "--prallel", "2"); !strings.Contains(r.stderr, "did you mean --parallel?") {
		t.Errorf("serve --prallel: %q", r.stderr)
	}

	v1, v2 := anerun(t, "", "--version"), anerun(t, "", "version")
	if v1.code != 0 || v1.stdout != v2.stdout {
		t.Errorf("--version %q and version %q differ", v1.stdout, v2.stdout)
	}
	for _, s := range []string{"anerun ", "github.com/anepack/anepack", "commit:", "go:       go1.", "kernels:  ", "format 1."} {
		if !strings.Contains(v1.stdout, s) {
			t.Errorf("version lacks %q:\n%s", s, v1.stdout)
		}
	}
	help := anerun(t, "", "--help")
	if !strings.Contains(help.stdout, "completion") || !strings.Contains(help.stdout, "--temp") {
		t.Errorf("help lists no completion or no --temp alias:\n%s", help.stdout)
	}
	if r := anerun(t, "", "completion", "bash"); r.code != 0 || !strings.Contains(r.stdout, "__start_anerun") {
		t.Errorf("completion bash: exit %d, %.200q", r.code, r.stdout)
	}

	p := start(t, "serve", path, "--host", "127.0.0.1", "--port", "0", "--threads", "1", "--ctx", "128")
	addr := serverAddr(t, p)
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("--host 127.0.0.1 --port 0 listens on %s", addr)
	}
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("/health: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Errorf("serve after SIGTERM: exit %d", code)
	}
	if r := anerun(t, "", "serve", path, "--addr", "127.0.0.1:0", "--port", "8000"); r.code == 0 || !strings.Contains(r.stderr, "--addr or --host/--port, not both") {
		t.Errorf("--addr with --port: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestErrorsSayWhatToDo checks the one-line errors of the mistakes a new user makes: a GGUF
// file, a model name that is neither a file nor stored nor a repo id, a directory, and a
// subcommand without its argument. None prints a stack trace (anerun() fails on one).
func TestErrorsSayWhatToDo(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("ANEPACK_HOME", filepath.Join(dir, "store"))
	gguf := filepath.Join(dir, "qwen2.5-0.5b-instruct-q4_k_m.gguf")
	os.WriteFile(gguf, append([]byte("GGUF"), make([]byte, 64)...), 0o644)
	renamed := filepath.Join(dir, "model.bin") // a GGUF file by its content, whatever its name
	os.WriteFile(renamed, append([]byte("GGUF"), make([]byte, 64)...), 0o644)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{gguf, "hi"}, []string{gguf, "is a GGUF file", "does not read", "safetensors repo", "anerun Qwen/Qwen2.5-0.5B-Instruct"}},
		{[]string{renamed, "hi"}, []string{renamed, "is a GGUF file"}},
		{[]string{"import", gguf}, []string{"is a GGUF file"}},
		{[]string{"nonexistent", "hi"}, []string{"nonexistent: no such file", "no model named nonexistent:f16", "anerun list", "Org/Name"}},
		{[]string{"nonexistent.aneb", "hi"}, []string{"nonexistent.aneb: no such file"}},
		{[]string{dir, "hi"}, []string{dir + " is a directory", "anepack " + dir}},
		{[]string{"bench"}, []string{"missing argument MODEL", "usage: anerun bench MODEL"}},
		{[]string{"import"}, []string{"missing argument FILE.aneb"}},
		{[]string{"rm"}, []string{"missing NAME|REF|ID"}},
		{[]string{"pull", "a", "b"}, []string{`too many arguments: "b"`}},
	} {
		r := anerun(t, "", tc.args...)
		if r.code == 0 {
			t.Errorf("anerun %q: exit 0", tc.args)
			continue
		}
		if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n > 0 {
			t.Errorf("anerun %q: %d lines on stderr; want one:\n%s", tc.args, n+1, r.stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("anerun %q: stderr %q lacks %q", tc.args, r.stderr, w)
			}
		}
	}
}
