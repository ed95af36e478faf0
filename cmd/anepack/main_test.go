package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// anepackBin is the real binary, built once for the end-to-end tests.
var anepackBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "anepack-bin-")
	if err != nil {
		panic(err)
	}
	anepackBin = filepath.Join(dir, "anepack")
	if out, err := exec.Command("go", "build", "-o", anepackBin, ".").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run executes anepack and returns stdout, stderr and the exit code.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	// A hung anepack (one blocked on a named pipe, say) fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, anepackBin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("anepack %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// TestSynthPackInspectVerify runs the whole pipeline through the binary.
func TestSynthPackInspectVerify(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "qwen2-tiny")
	mustRun(t, "synth", "--config", "../../configs/qwen2-tiny.json", "--seed", "1", "-o", ckpt)
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		if _, err := os.Stat(filepath.Join(ckpt, f)); err != nil {
			t.Fatalf("synth did not write %s", f)
		}
	}
	// Default output name derives from the model: run in dir so it lands there.
	cmd := exec.Command(anepackBin, "qwen2-tiny")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pack: %v\n%s", err, out)
	}
	bundle := filepath.Join(dir, "qwen2-tiny.aneb")
	if _, err := os.Stat(bundle); err != nil {
		t.Fatal("default output name not used:", err)
	}
	// Packing again without --force refuses; with --force succeeds.
	if _, errOut, code := run(t, ckpt, "-o", bundle); code == 0 || !strings.Contains(errOut, "--force") {
		t.Fatalf("overwrite without --force: exit %d, %s", code, errOut)
	}
	mustRun(t, ckpt, "-o", bundle, "--force", "--dtype", "f32")

	table := mustRun(t, "inspect", bundle)
	for _, want := range []string{"Qwen2ForCausalLM", "f32 weights", "blob/layers.0.attn_qkv", "tokenizer", "sha256:", "programs    0 ANE program(s)"} {
		if !strings.Contains(table, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, table)
		}
	}
	var doc struct {
		Sections []struct{ Name string } `json:"sections"`
		Manifest struct {
			Model struct{ Architecture string } `json:"model"`
		} `json:"manifest"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "inspect", "--json", bundle)), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Manifest.Model.Architecture != "Qwen2ForCausalLM" || len(doc.Sections) < 8 {
		t.Errorf("inspect --json: %+v", doc)
	}
	digest := strings.TrimSpace(mustRun(t, "verify", bundle))
	if !strings.HasPrefix(digest, "sha256:") || len(digest) != 71 {
		t.Errorf("verify printed %q", digest)
	}

	// Corrupt one byte inside the first weight blob: verify exits 1 and names the section.
	var sections []struct {
		Name   string
		Offset int64
	}
	var full struct {
		Sections *[]struct {
			Name   string
			Offset int64
		} `json:"sections"`
	}
	full.Sections = &sections
	json.Unmarshal([]byte(mustRun(t, "inspect", "--json", bundle)), &full)
	var target int64 = -1
	for _, s := range sections {
		if s.Name == "blob/layers.1.mlp" {
			target = s.Offset + 200
		}
	}
	if target < 0 {
		t.Fatal("no blob/layers.1.mlp section")
	}
	f, err := os.OpenFile(bundle, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0x5A}, target)
	f.Close()
	_, errOut, code := run(t, "verify", bundle)
	if code != 1 || !strings.Contains(errOut, "blob/layers.1.mlp") {
		t.Fatalf("verify of a corrupt bundle: exit %d, stderr %q", code, errOut)
	}
}

func TestUsageErrors(t *testing.T) {
	_, errOut, code := run(t, "inspec")
	if code == 0 || !strings.Contains(errOut, `did you mean "inspect"`) {
		t.Errorf("typo: exit %d, %q", code, errOut)
	}
	_, errOut, code = run(t, "./no-such-dir")
	if code == 0 || !strings.Contains(errOut, "no-such-dir") {
		t.Errorf("missing dir: exit %d, %q", code, errOut)
	}
	_, errOut, code = run(t, "inspect", "/etc/hostname")
	if code == 0 || !strings.Contains(errOut, "hostname") {
		t.Errorf("inspect of a non-bundle: exit %d, %q", code, errOut)
	}
}

// TestInterruptLeavesNothing sends SIGINT, SIGTERM and SIGHUP (a closed terminal; it used to
// kill anepack and leave its temporary file) while a larger model is being packed: the process
// exits non-zero and neither the bundle nor a temp file remains. A pack killed outright
// (SIGKILL cannot be caught) does leave its temp file; the next pack into that directory
// removes it.
func TestInterruptLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "m")
	cfg := filepath.Join(dir, "cfg.json")
	os.WriteFile(cfg, []byte(`{"architectures":["Qwen2ForCausalLM"],"hidden_size":512,"intermediate_size":2048,
		"num_hidden_layers":8,"num_attention_heads":8,"num_key_value_heads":2,"vocab_size":151936,
		"max_position_embeddings":4096,"tie_word_embeddings":false,"rms_norm_eps":1e-6,"rope_theta":1000000}`), 0o644)
	mustRun(t, "synth", "--config", cfg, "--seed", "3", "-q", "-o", ckpt)
	outDir := filepath.Join(dir, "out")
	os.Mkdir(outDir, 0o755)
	for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGKILL} {
		stderr := interruptPack(t, ckpt, filepath.Join(outDir, "m.aneb"), sig)
		ents, _ := os.ReadDir(outDir)
		if sig == syscall.SIGKILL {
			if len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), ".m.aneb.tmp-") {
				t.Fatalf("after SIGKILL the directory holds %v; want the temp file the killed process could not remove", ents)
			}
			continue
		}
		for _, e := range ents {
			t.Errorf("%v left behind %s (stderr: %s)", sig, e.Name(), stderr)
		}
	}
	// The next pack into that directory (of any bundle) sweeps away what the killed one left.
	tiny := filepath.Join(dir, "tiny")
	mustRun(t, "synth", "--config", "../../configs/qwen2-tiny.json", "--seed", "1", "-q", "-o", tiny)
	mustRun(t, tiny, "-q", "-o", filepath.Join(outDir, "tiny.aneb"))
	ents, _ := os.ReadDir(outDir)
	if len(ents) != 1 || ents[0].Name() != "tiny.aneb" {
		t.Errorf("after a complete pack the directory holds %v; want only tiny.aneb", ents)
	}
}

// interruptPack starts packing ckpt into out, sends sig once the temp file exists, and waits
// for the process to end; it returns its stderr.
func interruptPack(t *testing.T, ckpt, out string, sig os.Signal) string {
	t.Helper()
	cmd := exec.Command(anepackBin, ckpt, "-o", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until conversion has started: the temp file appears.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*.tmp-*")); len(m) > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(sig)
	if err := cmd.Wait(); err == nil {
		t.Fatalf("packing finished before %v arrived; make the model larger", sig)
	}
	return stderr.String()
}
