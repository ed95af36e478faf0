package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/cpu"
	"github.com/anepack/anepack/runtime/testmodel"
	"github.com/anepack/anepack/tokenizer"
)

// These tests build the real anerun binary and run it as a process on real bundles.

var anerunBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "anerun-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	anerunBin = filepath.Join(dir, "anerun")
	if out, err := exec.Command("go", "build", "-o", anerunBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	testmodel.Cleanup()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// runLimit is the longest anerun() lets the binary run; the first-token benchmark, which packs
// a full-size model, raises it.
var runLimit = time.Minute

// anerun runs the binary with args and stdin, failing the test if it cannot start or runs for
// more than runLimit.
func anerun(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, anerunBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("anerun %q: %v", args, err)
	}
	if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine ") {
		t.Fatalf("anerun %q crashed:\n%s", args, r.stderr)
	}
	return r
}

func bundle(t *testing.T) string { return testmodel.Bundle(t, "qwen2-tiny", "f16") }

// expected generates greedily in this process, the way the binary should.
func expected(t *testing.T, path string, prompt func(*tokenizer.Tokenizer) []int, max int) string {
	t.Helper()
	m, err := runtime.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b, err := cpu.New(m, cpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, err := runtime.NewSession(m, b, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tok, err := m.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Generate(context.Background(), prompt(tok), runtime.GenerateOptions{MaxTokens: max, Sampling: runtime.DefaultSampling(m.Generation())})
	if err != nil {
		t.Fatal(err)
	}
	return res.Text
}

func TestGenerateRaw(t *testing.T) {
	path := bundle(t)
	const text = "The quick brown fox"
	want := expected(t, path, func(tok *tokenizer.Tokenizer) []int { return encodeRaw(tok, text) }, 12)
	r := anerun(t, "", path, "--raw", text, "--max-tokens", "12")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if r.stdout != want+"\n" {
		t.Errorf("stdout %q; want %q", r.stdout, want+"\n")
	}
	// The prompt from stdin gives the same.
	if r2 := anerun(t, text, path, "--raw", "-", "-n", "12"); r2.stdout != r.stdout {
		t.Errorf("prompt from stdin: %q; from the argument: %q", r2.stdout, r.stdout)
	}
}

func TestGenerateChatVerbose(t *testing.T) {
	path := bundle(t)
	want := expected(t, path, func(tok *tokenizer.Tokenizer) []int {
		ids, err := encodeChat(tok, []chatMessage{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi there"}})
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}, 10)
	r := anerun(t, "", path, "Hi there", "--system", "Be brief.", "-n", "10", "--verbose")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if r.stdout != want+"\n" {
		t.Errorf("stdout %q; want %q", r.stdout, want+"\n")
	}
	for _, s := range []string{"prompt: ", "prompt ids: [151644, ", "prefill: ", "decode: ", "tokens/s", "time to first token: ", "since anerun started", "backend cpu"} {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("--verbose output lacks %q:\n%s", s, r.stderr)
		}
	}
}

// TestSamplingFlags checks that a seed makes sampling reproducible and that stop strings cut the
// output.
func TestSamplingFlags(t *testing.T) {
	path := bundle(t)
	args := []string{path, "--raw", "Once upon a time", "-n", "16", "--temperature", "1.5", "--top-k", "40", "--top-p", "0.95", "--min-p", "0.01", "--repeat-penalty", "1.1"}
	a := anerun(t, "", append(args, "--seed", "7")...)
	b := anerun(t, "", append(args, "--seed", "7")...)
	c := anerun(t, "", append(args, "--seed", "8")...)
	if a.code != 0 || a.stdout == "" || a.stdout != b.stdout {
		t.Errorf("seed 7 twice: %q (exit %d) and %q; stderr %s", a.stdout, a.code, b.stdout, a.stderr)
	}
	if a.stdout == c.stdout {
		t.Errorf("seeds 7 and 8 gave the same text %q", a.stdout)
	}
	greedy := anerun(t, "", path, "--raw", "Once upon a time", "-n", "16")
	text := strings.TrimSuffix(greedy.stdout, "\n")
	runes := []rune(text)
	stop := string(runes[len(runes)/2 : len(runes)/2+2])
	cut := anerun(t, "", path, "--raw", "Once upon a time", "-n", "16", "--stop", "zzzz", "--stop", stop)
	if want := text[:strings.Index(text, stop)]; strings.TrimSuffix(cut.stdout, "\n") != want {
		t.Errorf("--stop %q: %q; want %q", stop, cut.stdout, want)
	}
}

// TestLogitsMatchGolden runs `anerun logits` over each golden case's prompt and generated ids
// and compares every position with Hugging Face's top lists.
func TestLogitsMatchGolden(t *testing.T) {
	for _, name := range testmodel.Models {
		g := testmodel.LoadGolden(t, name)
		path := testmodel.Bundle(t, name, "f16")
		for _, c := range g.Cases[:3] { // the 700-token case is covered in runtime/cpu
			ids := append(append([]int{}, c.PromptIDs...), c.GeneratedIDs[:len(c.GeneratedIDs)-1]...)
			strs := make([]string, len(ids))
			for i, id := range ids {
				strs[i] = strconv.Itoa(id)
			}
			r := anerun(t, "", "logits", path, "--ids", strings.Join(strs, ","), "--top", "8", "--prefill", strconv.Itoa(len(c.PromptIDs)))
			if r.code != 0 {
				t.Fatalf("%s/%s: exit %d: %s", name, c.Name, r.code, r.stderr)
			}
			var out struct {
				Positions []struct {
					Pos int          `json:"pos"`
					Top [][2]float64 `json:"top"`
				} `json:"positions"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
				t.Fatalf("%s/%s: output is not the documented JSON: %v\n%s", name, c.Name, err, r.stdout[:min(len(r.stdout), 500)])
			}
			if len(out.Positions) != len(ids) {
				t.Fatalf("%s/%s: %d positions; want %d", name, c.Name, len(out.Positions), len(ids))
			}
			compare := func(pos int, want [][2]float64) {
				got := out.Positions[pos]
				if got.Pos != pos || len(got.Top) != 8 {
					t.Fatalf("%s/%s: position %d is %+v", name, c.Name, pos, got)
				}
				for i, w := range want {
					if d := math.Abs(got.Top[i][1] - w[1]); d > 1e-3 {
						t.Errorf("%s/%s: position %d rank %d: [%v, %.6f]; HF [%v, %.6f]", name, c.Name, pos, i, got.Top[i][0], got.Top[i][1], w[0], w[1])
					}
					if w[1]-want[min(i+1, len(want)-1)][1] > 2e-3 && i == 0 && got.Top[0][0] != w[0] {
						t.Errorf("%s/%s: position %d: argmax %v; HF %v", name, c.Name, pos, got.Top[0][0], w[0])
					}
				}
			}
			for j, want := range c.PrefillTop4 {
				compare(len(c.PromptIDs)-len(c.PrefillTop4)+j, want)
			}
			for j, want := range c.StepsTop8 {
				compare(len(c.PromptIDs)-1+j, want)
			}
		}
	}
}

func TestBenchJSON(t *testing.T) {
	r := anerun(t, "", "bench", bundle(t), "--prompt-tokens", "16", "--gen-tokens", "8", "--repetitions", "1", "--threads", "2", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	keys := []string{"prefill_tokens_per_s", "decode_tokens_per_s", "ttft_ms", "peak_rss_bytes", "backend", "threads", "amx_prefill", "isa", "cpu_list", "prefill_runs", "decode_runs",
		"state_bytes", "full_kv_bytes", "cache_type", "context"}
	if len(raw) != len(keys) {
		t.Errorf("keys %v; want exactly %v", raw, keys)
	}
	var res benchResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if _, ok := raw[k]; !ok {
			t.Errorf("no key %q in %s", k, r.stdout)
		}
	}
	if res.PrefillTokensPerS <= 0 || res.DecodeTokensPerS <= 0 || res.TTFTMs <= 0 || res.PeakRSSBytes < 1<<20 || res.Backend != "cpu" || res.Threads != 2 {
		t.Errorf("implausible result %+v", res)
	}
	if len(res.PrefillRuns) != 1 || res.PrefillRuns[0] != res.PrefillTokensPerS || len(res.DecodeRuns) != 1 || res.DecodeRuns[0] != res.DecodeTokensPerS {
		t.Errorf("one repetition's runs %v, %v differ from its means %v, %v", res.PrefillRuns, res.DecodeRuns, res.PrefillTokensPerS, res.DecodeTokensPerS)
	}
	// qwen2-tiny: 2 layers, 2 KV heads of 16; every layer holds every position.
	if res.Context != 24 || res.FullKVBytes != 2*2*32*24*4 || res.StateBytes != res.FullKVBytes || res.CacheType != "f32" {
		t.Errorf("context %d, KV cache %d bytes of %s, full %d; want 24 and %d of f32 for both", res.Context, res.StateBytes, res.CacheType, res.FullKVBytes, 2*2*32*24*4)
	}
	// An fp16 cache (llama.cpp's spelling of the flag) takes half.
	h := anerun(t, "", "bench", bundle(t), "-p", "16", "-n", "8", "-r", "1", "--cache-type-k", "f16", "--json")
	var hr benchResult
	if err := json.Unmarshal([]byte(h.stdout), &hr); err != nil {
		t.Fatalf("--cache-type-k f16: %v\n%s%s", err, h.stdout, h.stderr)
	}
	if hr.CacheType != "f16" || hr.StateBytes != 2*2*32*24*2 || hr.FullKVBytes != hr.StateBytes || hr.DecodeTokensPerS <= 0 {
		t.Errorf("--cache-type-k f16: KV cache %d bytes of %s, full %d; want %d of f16", hr.StateBytes, hr.CacheType, hr.FullKVBytes, 2*2*32*24*2)
	}
	// gemma3-tiny: two sliding layers (window 32) and one global, one KV head of 32: the rings
	// hold their window and two passes, far less than the full cache of 8192 positions.
	g := anerun(t, "", "bench", testmodel.Bundle(t, "gemma3-tiny", "f16"), "-p", "8", "-n", "4", "-r", "1", "--ctx", "8192", "--json")
	var gr benchResult
	if err := json.Unmarshal([]byte(g.stdout), &gr); err != nil {
		t.Fatalf("gemma3 bench: %v\n%s%s", err, g.stdout, g.stderr)
	}
	if full := int64(3 * 2 * 32 * 8192 * 4); gr.Context != 8192 || gr.FullKVBytes != full || gr.StateBytes <= full/3 || gr.StateBytes >= full/2 {
		t.Errorf("gemma3-tiny at --ctx 8192: KV cache %d bytes, full %d; want full %d and the cache between a third and half of it", gr.StateBytes, gr.FullKVBytes, full)
	}
	text := anerun(t, "", "bench", bundle(t), "-p", "8", "-n", "4", "-r", "2")
	for _, s := range []string{"prefill: 8 tokens", "decode: 4 tokens", "median", "range", "time to first token", "peak RSS", "KV cache: "} {
		if !strings.Contains(text.stdout, s) {
			t.Errorf("bench output lacks %q:\n%s", s, text.stdout)
		}
	}
}

func TestBadInput(t *testing.T) {
	path := bundle(t)
	dir := t.TempDir()
	foreign := filepath.Join(dir, "llama.aneb")
	if err := testmodel.Rewrite(path, foreign, func(m *format.Manifest) { m.Model.Architecture = "MambaForCausalLM" }); err != nil {
		t.Fatal(err)
	}
	notBundle := filepath.Join(dir, "notes.txt")
	os.WriteFile(notBundle, []byte("hello"), 0o644)
	long := strings.Repeat("word ", 40)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"missing file", []string{filepath.Join(dir, "nope.aneb"), "hi"}, []string{"nope.aneb", "no such file"}},
		{"not a bundle", []string{notBundle, "hi"}, []string{"notes.txt"}},
		{"unsupported architecture", []string{foreign, "hi"}, []string{"MambaForCausalLM", "not supported"}},
		{"empty prompt", []string{path, ""}, []string{"prompt is empty"}},
		{"blank prompt", []string{path, "  \n"}, []string{"prompt is empty"}},
		{"prompt longer than the context", []string{path, "--raw", long, "--ctx", "16"}, []string{"do not fit the context of 16 tokens"}},
		{"context past the model's maximum", []string{path, "hi", "--ctx", "100000"}, []string{"--ctx 100000", "32768"}},
		{"unknown backend", []string{path, "hi", "--backend", "gpu"}, []string{`"gpu"`, "auto, ane, cpu, sim"}},
		{"bad ANE option on the CPU", []string{path, "hi", "--backend", "cpu", "--ane-constexpr", "lazy"}, []string{`--ane-constexpr "lazy"`, "auto, native, expand"}},
		{"no prompt", []string{path}, []string{"expected a prompt"}},
		{"bad sampling", []string{path, "hi", "--top-p", "2"}, []string{"top-p 2"}},
		{"logits without ids", []string{"logits", path}, []string{"--ids"}},
		{"logits bad id", []string{"logits", path, "--ids", "1,x"}, []string{`"x"`}},
		{"logits id past vocab", []string{"logits", path, "--ids", "1,999999"}, []string{"999999", "vocabulary"}},
		{"bench bad counts", []string{"bench", path, "--gen-tokens", "0"}, []string{"must be positive"}},
		{"tokenize bad json", []string{"tokenize", path}, []string{"line 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdin := ""
			if tc.name == "tokenize bad json" {
				stdin = "{not json\n"
			}
			r := anerun(t, stdin, tc.args...)
			if r.code == 0 {
				t.Fatalf("exit 0; stdout %q", r.stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q does not mention %q", r.stderr, w)
				}
			}
		})
	}
}

// startAnerun starts the binary with stdin as a pipe and returns once stdout has produced
// output (so generation is under way).
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *syncBuffer
	stderr *syncBuffer
}

type syncBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{mu: make(chan struct{}, 1)} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.String()
}

func start(t *testing.T, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(anerunBin, args...), stdout: newSyncBuffer(), stderr: newSyncBuffer()}
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill() })
	return p
}

// waitOutput waits until stdout holds more than n bytes.
func (p *process) waitOutput(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(p.stdout.String()) <= n {
		if time.Now().After(deadline) {
			t.Fatalf("no output after 30 s; stderr: %s", p.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *process) wait(t *testing.T) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(20 * time.Second):
		t.Fatalf("still running 20 s later; stdout %q stderr %q", p.stdout.String(), p.stderr.String())
		return -1
	}
}

// TestInterruptGeneration sends Ctrl-C (SIGINT) during a long generation: anerun stops, ends the
// line and exits with status 130, without a crash.
func TestInterruptGeneration(t *testing.T) {
	p := start(t, bundle(t), "--raw", "Hello", "--max-tokens", "0", "--ctx", "32768")
	p.waitOutput(t, 0)
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := p.wait(t)
	if code != exitInterrupted {
		t.Errorf("exit %d; want %d", code, exitInterrupted)
	}
	if stderr := p.stderr.String(); !strings.Contains(stderr, "interrupted") || strings.Contains(stderr, "goroutine") {
		t.Errorf("stderr: %q", stderr)
	}
	if out := p.stdout.String(); !strings.HasSuffix(out, "\n") {
		t.Errorf("output does not end its line: %q", out[max(0, len(out)-40):])
	}
}

// TestChat runs the interactive mode: two turns answered from one conversation (the second
// reuses the first's cached tokens), a Ctrl-C that stops only the current answer, and Ctrl-D
// (end of input) to exit.
func TestChat(t *testing.T) {
	path := bundle(t)
	r := anerun(t, "Hello\nAnd then?\n", "-i", path, "-n", "6", "--verbose")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if n := strings.Count(r.stderr, "generated: 6 tokens"); n != 2 {
		t.Errorf("%d answers of 6 tokens; want 2:\n%s", n, r.stderr)
	}
	var reused []int
	for _, line := range strings.Split(r.stderr, "\n") {
		var n, m int
		if _, err := fmt.Sscanf(line, "prompt: %d tokens (%d reused", &n, &m); err == nil {
			reused = append(reused, m)
		}
	}
	if len(reused) != 2 || reused[0] != 0 || reused[1] < 10 {
		t.Errorf("tokens reused per turn %v; want 0, then the first turn's", reused)
	}

	// A message that no longer fits the context is refused with advice; /clear recovers (and
	// /reset, its older name).
	r = anerun(t, "hello there my friend\nhi\n/reset\nhi\n", "-i", path, "--ctx", "16", "-n", "3", "--verbose")
	if r.code != 0 || !strings.Contains(r.stderr, "do not fit the context of 16 tokens") || !strings.Contains(r.stderr, "/clear starts a new conversation") {
		t.Errorf("context overflow in a chat: exit %d, stderr %s", r.code, r.stderr)
	}
	if n := strings.Count(r.stderr, "generated: "); n != 2 {
		t.Errorf("%d answers; want 2 (before the overflow and after /reset):\n%s", n, r.stderr)
	}

	// Ctrl-C during an endless answer stops it; the chat goes on.
	p := start(t, "-i", path, "--max-tokens", "0", "--ctx", "32768")
	io.WriteString(p.stdin, "Tell me everything\n")
	p.waitOutput(t, 0)
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	before := len(p.stdout.String())
	time.Sleep(300 * time.Millisecond)
	if after := len(p.stdout.String()); after != before {
		t.Fatalf("still generating after Ctrl-C (%d -> %d bytes)", before, after)
	}
	io.WriteString(p.stdin, "/reset\n") // the conversation could be long: start afresh
	p.stdin.Close()                     // Ctrl-D
	if code := p.wait(t); code != 0 {
		t.Errorf("exit %d after Ctrl-D; stderr %s", code, p.stderr.String())
	}

	// Ctrl-C at the prompt exits.
	p = start(t, "-i", path)
	time.Sleep(300 * time.Millisecond)
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != exitInterrupted {
		t.Errorf("Ctrl-C at the prompt: exit %d; want %d", code, exitInterrupted)
	}
}

func TestTokenize(t *testing.T) {
	path := bundle(t)
	m, err := runtime.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tok, err := m.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	const text = "Hello, world! <|im_start|>héllo 123"
	want := formatIDs(tok.Encode(text))
	r := anerun(t, "", "tokenize", path, text)
	if r.code != 0 || r.stdout != want+"\n" {
		t.Errorf("tokenize: %q (exit %d, %s); want %q", r.stdout, r.code, r.stderr, want)
	}
	r = anerun(t, "", "tokenize", path, "--decode", want)
	if r.stdout != text+"\n" {
		t.Errorf("--decode: %q; want %q", r.stdout, text)
	}
	r = anerun(t, `{"text": "Hello"}`+"\n"+`{"text": "<|im_start|>"}`+"\n", "tokenize", path)
	wantLines := fmt.Sprintf("{\"ids\":%s}\n{\"ids\":%s}\n", compact(tok.Encode("Hello")), compact(tok.Encode("<|im_start|>")))
	if r.stdout != wantLines {
		t.Errorf("JSON lines: %q; want %q", r.stdout, wantLines)
	}
	r = anerun(t, `{"ids": [9707, 11]}`+"\n", "tokenize", path, "--decode")
	if want := fmt.Sprintf("{\"text\":%q}\n", tok.Decode([]int{9707, 11})); r.stdout != want {
		t.Errorf("JSON lines --decode: %q; want %q", r.stdout, want)
	}
}

func compact(ids []int) string { return strings.ReplaceAll(formatIDs(ids), " ", "") }

// TestTemplateMatchesHF renders every record of testdata/chat-public.jsonl (transformers'
// apply_chat_template outputs) through `anerun template` and expects the same bytes.
func TestTemplateMatchesHF(t *testing.T) {
	path := bundle(t)
	root, err := testmodel.Root()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "testdata", "chat-public.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i, line := range lines {
		var rec struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		// The request is the record without its "text" key, which comes last; cutting the raw
		// line keeps every other key in its order.
		cut := strings.LastIndex(line, `, "text": `)
		if cut < 0 {
			t.Fatalf("record %d has no trailing text key", i)
		}
		r := anerun(t, line[:cut]+"}", "template", path)
		if r.code != 0 {
			t.Fatalf("record %d: exit %d: %s", i, r.code, r.stderr)
		}
		if r.stdout != rec.Text {
			t.Errorf("record %d:\n got %q\nwant %q", i, r.stdout, rec.Text)
		}
	}
	if len(lines) < 10 {
		t.Errorf("only %d records", len(lines))
	}
	r := anerun(t, "[1, 2]", "template", path)
	if r.code == 0 || !strings.Contains(r.stderr, "JSON object") {
		t.Errorf("a request that is not an object: exit %d, stderr %q", r.code, r.stderr)
	}
}
