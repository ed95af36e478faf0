package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anepack/anepack/hub/hubtest"
	"github.com/anepack/anepack/store"
)

// tinyHub synthesizes the qwen2-tiny checkpoint, serves it as Org/Tiny-Model on a fake Hub on
// loopback, points the environment at it (and at an empty store), and returns the server, the
// commit and the checkpoint directory.
func tinyHub(t *testing.T) (*hubtest.Server, string, string) {
	t.Helper()
	ck := filepath.Join(t.TempDir(), "Tiny-Model")
	mustRun(t, "synth", "--config", "../../configs/qwen2-tiny.json", "--seed", "1", "-o", ck, "-q")
	entries, err := os.ReadDir(ck)
	if err != nil {
		t.Fatal(err)
	}
	var files []hubtest.File
	for _, e := range entries {
		files = append(files, hubtest.File{Path: e.Name(), Disk: filepath.Join(ck, e.Name())})
	}
	srv := hubtest.New(t, hubtest.Options{})
	commit := srv.MustAddRepo(t, hubtest.Repo{ID: "Org/Tiny-Model", Files: files})
	hubEnv(t, srv)
	t.Setenv("ANEPACK_HOME", t.TempDir())
	return srv, commit, ck
}

// runIn runs anepack in dir and returns stdout, stderr and the exit code.
func runIn(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(anepackBin, args...)
	cmd.Dir = dir
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestOutputCheckedBeforeDownload checks that `anepack Org/Name` refuses an output it could not
// write before it asks the Hub anything: the default output that exists without --force, a
// directory that does not exist, a path that is a directory. The default output is named
// after the repo (Tiny-Model.aneb), which is what the README's next command runs.
func TestOutputCheckedBeforeDownload(t *testing.T) {
	srv, _, _ := tinyHub(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "Tiny-Model.aneb"), []byte("an older bundle"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub.aneb"), 0o755)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"Org/Tiny-Model"}, "output Tiny-Model.aneb already exists; use --force to overwrite it"},
		{[]string{"Org/Tiny-Model", "-o", filepath.Join(dir, "missing", "x.aneb")}, "the directory " + filepath.Join(dir, "missing") + " does not exist"},
		{[]string{"Org/Tiny-Model", "-o", "sub.aneb"}, "output sub.aneb is a directory"},
	} {
		srv.ResetRequests()
		_, errOut, code := runIn(t, dir, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("anepack %q: exit %d, stderr %q; want one line with %q", tc.args, code, errOut, tc.want)
		}
		if n := len(srv.Requests()); n != 0 {
			t.Errorf("anepack %q asked the Hub %d times before refusing", tc.args, n)
		}
	}
	// With --force the same command downloads and writes the default output.
	out, errOut, code := runIn(t, dir, "Org/Tiny-Model", "--force")
	if code != 0 || strings.TrimSpace(out) != "Tiny-Model.aneb" {
		t.Fatalf("--force: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "Org/Tiny-Model: asking the Hub for its files") {
		t.Errorf("no line while the Hub lists the files:\n%s", errOut)
	}
	if strings.Contains(errOut, " MB") || strings.Contains(errOut, " kB") || strings.Contains(errOut, " GB") {
		t.Errorf("progress mixes decimal units with binary ones:\n%s", errOut)
	}
}

// TestPackIntoStore packs a Hub repo with --store (the store gets it, named Org/Tiny-Model:f16,
// and no file is left in the current directory) and a local checkpoint with -o and --store
// (the file is written and also stored, under the checkpoint's name).
func TestPackIntoStore(t *testing.T) {
	_, commit, ck := tinyHub(t)
	dir := t.TempDir()
	out, errOut, code := runIn(t, dir, "Org/Tiny-Model", "--store")
	if code != 0 || strings.TrimSpace(out) != "Org/Tiny-Model:f16" || !strings.Contains(errOut, `anerun Org/Tiny-Model:f16 "prompt"`) {
		t.Fatalf("--store: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("--store without -o left %v in the current directory", ents)
	}
	st, err := store.Open(os.Getenv("ANEPACK_HOME"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := st.Lookup("Org/Tiny-Model:f16")
	if err != nil || e.Source != "packed Org/Tiny-Model@"+commit[:12] || e.Model.DType != "f16" || !st.Has(e.Digest) {
		t.Errorf("stored entry %+v (%v)", e, err)
	}
	if ents, _ := os.ReadDir(st.TempDir()); len(ents) != 0 {
		t.Errorf("the store's work area kept %v", ents)
	}

	file := filepath.Join(dir, "mine.aneb")
	out, errOut, code = runIn(t, dir, ck, "-o", file, "--store", "--dtype", "f32")
	if code != 0 || strings.TrimSpace(out) != file {
		t.Fatalf("-o with --store: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	e, err = st.Lookup("Tiny-Model:f32")
	if err != nil || e.Source != "packed "+ck || !st.Has(e.Digest) {
		t.Errorf("stored entry of the local pack %+v (%v)", e, err)
	}
}

// TestErrorsSayWhatToDo checks anepack's one-line errors for what a new user gets wrong.
func TestErrorsSayWhatToDo(t *testing.T) {
	dir := t.TempDir()
	gguf := filepath.Join(dir, "model-q4_k_m.gguf")
	os.WriteFile(gguf, append([]byte("GGUF"), make([]byte, 64)...), 0o644)
	ck := filepath.Join(dir, "ck")
	mustRun(t, "synth", "--config", "../../configs/qwen2-tiny.json", "--seed", "1", "-o", ck, "-q")
	bundle := filepath.Join(dir, "b.aneb")
	mustRun(t, ck, "-o", bundle, "-q")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{gguf}, []string{gguf + " is a GGUF file", "does not read", "safetensors repo", "anepack Qwen/Qwen2.5-0.5B-Instruct"}},
		{[]string{"nonexistent"}, []string{"nonexistent: no such directory", "Org/Name form", "Qwen/Qwen2.5-0.5B-Instruct"}},
		{[]string{bundle}, []string{"is already a .aneb bundle", "anerun " + bundle, "anerun import"}},
		{[]string{"inspect", ck}, []string{ck + " is a directory", "wants a .aneb bundle", "anepack " + ck}},
		{[]string{"verify", ck}, []string{"wants a .aneb bundle"}},
		{[]string{"inspect", gguf}, []string{"is a GGUF file"}},
		{[]string{"inspect"}, []string{"missing argument BUNDLE", "usage: anepack inspect BUNDLE"}},
		{[]string{"push", bundle}, []string{"missing argument REF"}},
		{[]string{"synth", "x"}, []string{`too many arguments: "x"`}},
		{[]string{ck, "--foorce"}, []string{"unknown flag --foorce; did you mean --force?"}},
	} {
		_, errOut, code := run(t, tc.args...)
		if code == 0 {
			t.Errorf("anepack %q: exit 0", tc.args)
			continue
		}
		if strings.Count(strings.TrimSpace(errOut), "\n") > 0 || strings.Contains(errOut, "goroutine ") {
			t.Errorf("anepack %q: want one line, got:\n%s", tc.args, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("anepack %q: stderr %q lacks %q", tc.args, errOut, w)
			}
		}
	}

	// inspect shows the tokenizer and generation settings as lines; --json keeps them as JSON.
	table := mustRun(t, "inspect", bundle)
	for _, w := range []string{"tokenizer   BPE: 151669 tokens", "normalizer NFC, pre-tokenizer qwen2", "eos <|im_end|> (151645)", "generation  token ids: bos 151643, eos 151645", "anerun decodes greedily"} {
		if !strings.Contains(table, w) {
			t.Errorf("inspect lacks %q:\n%s", w, table)
		}
	}
	if strings.Contains(table, `{"added_tokens"`) {
		t.Errorf("inspect still prints the tokenizer as JSON:\n%s", table)
	}
	if js := mustRun(t, "inspect", "--json", bundle); !strings.Contains(js, `"vocab_size": 151669`) {
		t.Errorf("inspect --json lost the tokenizer's fields")
	}
	// verify labels both digests; stdout stays the bare file digest for scripts.
	out, errOut, code := run(t, "verify", bundle)
	if code != 0 || !strings.Contains(errOut, "root digest: sha256:") || !strings.Contains(errOut, "file digest: "+strings.TrimSpace(out)+" (sha256 of the whole file") {
		t.Errorf("verify: exit %d, stdout %q, stderr %s", code, out, errOut)
	}

	v1, v2 := mustRun(t, "--version"), mustRun(t, "version")
	if v1 != v2 || !strings.Contains(v1, "anepack ") || !strings.Contains(v1, "commit:") || !strings.Contains(v1, "kernels:") {
		t.Errorf("--version %q, version %q", v1, v2)
	}
	if help := mustRun(t, "--help"); !strings.Contains(help, "completion") || !strings.Contains(help, "--store") {
		t.Errorf("help lists no completion or no --store:\n%s", help)
	}
}
