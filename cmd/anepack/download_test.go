package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/hub/hubtest"
	"github.com/anepack/anepack/internal/qwentok"
	"github.com/anepack/anepack/pack"
	"github.com/anepack/anepack/synth"
)

// hubEnv points the Hugging Face environment at a fake Hub and a fresh cache.
func hubEnv(t *testing.T, srv *hubtest.Server) string {
	cache := t.TempDir()
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	t.Setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
	return cache
}

func fakeModelRepo(t *testing.T) (*hubtest.Server, string) {
	srv := hubtest.New(t, hubtest.Options{})
	commit := srv.MustAddRepo(t, hubtest.Repo{ID: "Org/Tiny-Model", Files: []hubtest.File{
		{Path: "config.json", Data: []byte(`{"model_type":"qwen2"}`)},
		{Path: "tokenizer.json", Data: []byte(`{}`)},
		{Path: "model.safetensors", Data: bytes.Repeat([]byte{7}, 4096)},
		{Path: "pytorch_model.bin", Data: bytes.Repeat([]byte{8}, 4096)},
		{Path: "onnx/model.onnx", Data: []byte("onnx")},
	}})
	return srv, commit
}

func TestDownloadCmd(t *testing.T) {
	srv, commit := fakeModelRepo(t)
	cache := hubEnv(t, srv)
	cmd := newDownloadCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"Org/Tiny-Model", "-q"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	dir := strings.TrimSpace(out.String())
	if dir != filepath.Join(cache, "models--Org--Tiny-Model", "snapshots", commit) {
		t.Fatalf("printed %q", dir)
	}
	for name, want := range map[string]bool{"config.json": true, "tokenizer.json": true, "model.safetensors": true, "pytorch_model.bin": false, "onnx": false} {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != want {
			t.Errorf("%s present: %v, want %v", name, err == nil, want)
		}
	}
	// --offline answers from the cache even with the Hub gone.
	srv.Close()
	cmd = newDownloadCmd()
	out.Reset()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"Org/Tiny-Model", "--offline", "-q"})
	if err := cmd.Execute(); err != nil || strings.TrimSpace(out.String()) != dir {
		t.Fatalf("offline: %q %v", out.String(), err)
	}
	cmd = newDownloadCmd()
	cmd.SetArgs([]string{"./not/a/repo/id"})
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "Org/Name") {
		t.Errorf("bad repo id: %v", err)
	}
}

func TestLsCmd(t *testing.T) {
	srv, _ := fakeModelRepo(t)
	hubEnv(t, srv)
	cmd := newLsCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"Org/Tiny-Model"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[5], "5 files, 8.0 KiB; * = 3 files, 4.0 KiB") {
		t.Fatalf("output:\n%s", out.String())
	}
	for _, l := range lines[:5] {
		f := strings.Fields(l)
		name := f[len(f)-1]
		packed := f[len(f)-2] == "*"
		if packed != (name == "config.json" || name == "tokenizer.json" || name == "model.safetensors") {
			t.Errorf("line %q", l)
		}
		if name == "model.safetensors" && !strings.Contains(l, "lfs") {
			t.Errorf("line %q: want lfs", l)
		}
	}
}

func TestResolveModel(t *testing.T) {
	srv, commit := fakeModelRepo(t)
	hubEnv(t, srv)
	src, err := resolveModel(context.Background(), "Org/Tiny-Model", &hubFlags{revision: "main", jobs: 2}, true)
	if err != nil {
		t.Fatal(err)
	}
	p := src.Provenance
	if src.Name != "Tiny-Model" || p.Source != "hf" || p.Repo != "Org/Tiny-Model" || p.Revision != "main" || p.Commit != commit ||
		len(src.KnownDigests) != 3 || len(src.KnownDigests["model.safetensors"]) != 64 || filepath.Base(src.Dir) != commit {
		t.Fatalf("%+v", src)
	}
	local := t.TempDir()
	if src, err = resolveModel(context.Background(), local, &hubFlags{}, true); err != nil || src.Dir != local || src.Provenance.Source != "" {
		t.Fatalf("local dir: %+v %v", src, err)
	}
}

// TestPackFromHub is the headline flow of `anepack Org/Model` in process: a
// SYNTH-1 checkpoint served by the fake Hub is fetched into the Hugging Face
// cache and packed; the bundle's sections are identical to packing the same
// files from a local directory, the manifest records the repo, revision and
// commit, and a second run with HF_HUB_OFFLINE=1 (the Hub gone) packs the
// same bundle from the cache.
func TestPackFromHub(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg, err := os.ReadFile(filepath.Join("..", "..", "configs", "qwen2-tiny.json"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := qwentok.Files()
	if err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "Tiny-Model")
	if err := synth.WriteCheckpoint(ctx, ck, cfg, tok, synth.Options{Seed: 1}); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(ck)
	if err != nil {
		t.Fatal(err)
	}
	files := []hubtest.File{{Path: "pytorch_model.bin", Data: []byte("not needed")}}
	for _, e := range entries {
		files = append(files, hubtest.File{Path: e.Name(), Disk: filepath.Join(ck, e.Name())})
	}
	srv := hubtest.New(t, hubtest.Options{})
	commit := srv.MustAddRepo(t, hubtest.Repo{ID: "Org/Tiny-Model", Files: files})
	hubEnv(t, srv)

	local := filepath.Join(dir, "local.aneb")
	if _, err := pack.Pack(ctx, ck, pack.Options{Output: local, NoPrograms: true}); err != nil {
		t.Fatal(err)
	}
	packRepo := func(out string) *format.Bundle {
		t.Helper()
		src, err := resolveModel(ctx, "Org/Tiny-Model", &hubFlags{revision: "main", jobs: 4}, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pack.Pack(ctx, src.Dir, pack.Options{Output: out, NoPrograms: true, Name: src.Name,
			Provenance: src.Provenance, KnownDigests: src.KnownDigests}); err != nil {
			t.Fatal(err)
		}
		b, err := format.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	want, err := format.Open(local)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	same := func(got *format.Bundle) {
		t.Helper()
		ws, gs := want.Sections(), got.Sections()
		if len(ws) != len(gs) {
			t.Fatalf("%d sections, want %d", len(gs), len(ws))
		}
		for i := range ws {
			if ws[i].Kind != gs[i].Kind || ws[i].Name != gs[i].Name || ws[i].SHA256 != gs[i].SHA256 {
				t.Errorf("section %d: %s %s %s, want %s %s %s", i, gs[i].Kind, gs[i].Name, gs[i].DigestString(), ws[i].Kind, ws[i].Name, ws[i].DigestString())
			}
		}
		p, lp := got.Manifest().Provenance, want.Manifest().Provenance
		if p.Source != "hf" || p.Repo != "Org/Tiny-Model" || p.Revision != "main" || p.Commit != commit || len(p.Files) != len(lp.Files) {
			t.Errorf("provenance %+v", p)
		}
		for i := range lp.Files {
			if p.Files[i] != lp.Files[i] {
				t.Errorf("source file %+v, want %+v", p.Files[i], lp.Files[i])
			}
		}
		if got.Manifest().Model.Name != "Tiny-Model" {
			t.Errorf("model name %q", got.Manifest().Model.Name)
		}
	}
	same(packRepo(filepath.Join(dir, "hub.aneb")))

	srv.Close()
	t.Setenv("HF_HUB_OFFLINE", "1")
	same(packRepo(filepath.Join(dir, "offline.aneb")))
}
