package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/anepack/anepack/hub/hubtest"
	"github.com/anepack/anepack/internal/qwentok"
	"github.com/anepack/anepack/pack"
	"github.com/anepack/anepack/runtime/testmodel"
	"github.com/anepack/anepack/synth"
)

// tinyRepo writes the SYNTH-1 qwen2-tiny checkpoint, serves it as Org/Tiny-Model on a fake Hub
// on loopback (with a file packing never downloads), points the Hugging Face and anepack
// environment of this test at it and at empty caches, and returns the server, the commit and
// the checkpoint directory.
func tinyRepo(t *testing.T) (*hubtest.Server, string, string) {
	t.Helper()
	cfgPath, err := testmodel.Config("qwen2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	tokFiles, err := qwentok.Files()
	if err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(t.TempDir(), "Tiny-Model")
	if err := synth.WriteCheckpoint(context.Background(), ck, cfg, tokFiles, synth.Options{Seed: 1}); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(ck)
	if err != nil {
		t.Fatal(err)
	}
	files := []hubtest.File{{Path: "pytorch_model.bin", Data: []byte("never downloaded")}}
	for _, e := range entries {
		files = append(files, hubtest.File{Path: e.Name(), Disk: filepath.Join(ck, e.Name())})
	}
	srv := hubtest.New(t, hubtest.Options{})
	commit := srv.MustAddRepo(t, hubtest.Repo{ID: "Org/Tiny-Model", Files: files})
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("ANEPACK_HOME", t.TempDir())
	return srv, commit, ck
}

// TestRunFromHub is the first ten minutes of a new user: `anerun Org/Name "prompt"` fetches the
// checkpoint from the (fake, loopback) Hub, packs it into the store and answers as the bundle
// packed by hand does; the second run starts from the store without a single request and
// without a line on stderr; with the Hub gone and HF_HUB_OFFLINE=1 it still runs, and even after
// `anerun rm` it packs again from the Hugging Face cache alone. list shows the name, weight type
// and source; --dtype and a tag pick another stored variant; pull of a stored model is up to
// date; -i and serve take the same names.
func TestRunFromHub(t *testing.T) {
	srv, commit, ck := tinyRepo(t)
	local := filepath.Join(t.TempDir(), "local.aneb")
	if _, err := pack.Pack(context.Background(), ck, pack.Options{Output: local}); err != nil {
		t.Fatal(err)
	}
	want := anerun(t, "", local, "Hello", "-n", "6")
	if want.code != 0 || want.stdout == "" {
		t.Fatalf("the hand-packed bundle: exit %d, %q, %s", want.code, want.stdout, want.stderr)
	}

	first := anerun(t, "", "Org/Tiny-Model", "Hello", "-n", "6")
	if first.code != 0 || first.stdout != want.stdout {
		t.Fatalf("first run: exit %d, stdout %q (want %q), stderr:\n%s", first.code, first.stdout, want.stdout, first.stderr)
	}
	for _, s := range []string{"Org/Tiny-Model:f16 is not in the store yet", "Org/Tiny-Model@" + commit[:12], "stored Org/Tiny-Model:f16"} {
		if !strings.Contains(first.stderr, s) {
			t.Errorf("first run's stderr lacks %q:\n%s", s, first.stderr)
		}
	}
	for _, r := range srv.Requests() {
		if strings.Contains(r.Path, "pytorch_model.bin") {
			t.Errorf("packing downloaded %s", r.Path)
		}
	}

	srv.ResetRequests()
	second := anerun(t, "", "Org/Tiny-Model", "Hello", "-n", "6")
	if second.code != 0 || second.stdout != want.stdout || second.stderr != "" {
		t.Errorf("second run: exit %d, stdout %q, stderr %q; want the same answer and nothing on stderr", second.code, second.stdout, second.stderr)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the second run made %d requests to the Hub: %+v", n, srv.Requests())
	}

	list := anerun(t, "", "list")
	if !strings.Contains(list.stdout, "Org/Tiny-Model:f16  f16") || !strings.Contains(list.stdout, "packed Org/Tiny-Model@"+commit[:12]) {
		t.Errorf("list:\n%s", list.stdout)
	}
	if r := anerun(t, "", "pull", "Org/Tiny-Model"); r.code != 0 || !strings.Contains(r.stderr, "Org/Tiny-Model:f16 is up to date") {
		t.Errorf("pull of a stored model: exit %d, stderr %s", r.code, r.stderr)
	}

	// Another variant: --dtype and the tag are the same thing, and contradicting is an error.
	f32 := anerun(t, "", "Org/Tiny-Model", "Hello", "-n", "6", "--dtype", "f32")
	if f32.code != 0 || !strings.Contains(f32.stderr, "stored Org/Tiny-Model:f32") {
		t.Errorf("--dtype f32: exit %d, stderr %s", f32.code, f32.stderr)
	}
	if r := anerun(t, "", "Org/Tiny-Model:f32", "Hello", "-n", "6"); r.code != 0 || r.stderr != "" || r.stdout != f32.stdout {
		t.Errorf(":f32 after --dtype f32: exit %d, stdout %q (want %q), stderr %q", r.code, r.stdout, f32.stdout, r.stderr)
	}
	if r := anerun(t, "", "Org/Tiny-Model:f16", "Hello", "--dtype", "f32"); r.code == 0 || !strings.Contains(r.stderr, "name different variants") {
		t.Errorf("tag and --dtype that disagree: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := anerun(t, "", "Org/Tiny-Model:q5", "Hello"); r.code == 0 || !strings.Contains(r.stderr, `unknown tag "q5"`) || !strings.Contains(r.stderr, "int4") {
		t.Errorf("unknown tag: exit %d, stderr %q", r.code, r.stderr)
	}

	// The chat and the other commands take the same name, from the store.
	if r := anerun(t, "Hello\n", "-i", "Org/Tiny-Model", "-n", "6"); r.code != 0 || r.stdout != want.stdout {
		t.Errorf("-i Org/Tiny-Model: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	if r := anerun(t, "", "tokenize", "Org/Tiny-Model", "Hello"); r.code != 0 || !strings.HasPrefix(r.stdout, "[") {
		t.Errorf("tokenize Org/Tiny-Model: exit %d, %q, %s", r.code, r.stdout, r.stderr)
	}
	p := start(t, "serve", "Org/Tiny-Model", "--port", "0", "--threads", "1", "--ctx", "128")
	resp, err := http.Get("http://" + serverAddr(t, p) + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	models, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(models), "Org/Tiny-Model") {
		t.Errorf("serve Org/Tiny-Model: /v1/models %d %s", resp.StatusCode, models)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Errorf("serve: exit %d after SIGTERM; stderr %s", code, p.stderr.String())
	}

	// Offline, with the Hub gone: the store answers; after rm, the Hugging Face cache does.
	srv.Close()
	t.Setenv("HF_HUB_OFFLINE", "1")
	if r := anerun(t, "", "Org/Tiny-Model", "Hello", "-n", "6"); r.code != 0 || r.stdout != want.stdout {
		t.Errorf("offline from the store: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	if r := anerun(t, "", "rm", "Org/Tiny-Model"); r.code != 0 || !strings.Contains(r.stdout, "removed Org/Tiny-Model:f16") {
		t.Errorf("rm Org/Tiny-Model: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	if r := anerun(t, "", "Org/Tiny-Model", "Hello", "-n", "6"); r.code != 0 || r.stdout != want.stdout || !strings.Contains(r.stderr, "stored Org/Tiny-Model:f16") {
		t.Errorf("offline after rm (packed again from the Hugging Face cache): exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	// A repo the cache never saw, offline: one line naming what is missing.
	r := anerun(t, "", "Org/Other-Model", "Hello")
	if r.code == 0 || !strings.Contains(r.stderr, "Org/Other-Model") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 1 {
		t.Errorf("offline, never fetched: exit %d, stderr %q", r.code, r.stderr)
	}
}
