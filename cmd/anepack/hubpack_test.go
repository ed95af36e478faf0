package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/hub/hubtest"
)

// TestPackRepoThroughBinary is the headline flow end to end with real processes:
// `HF_ENDPOINT=http://127.0.0.1:PORT anepack Org/Model` downloads from a fake Hub on loopback and
// packs; the bundle's sections equal packing the same files from a local directory; a second run
// with HF_HUB_OFFLINE=1 and the Hub shut down packs again from the cache.
func TestPackRepoThroughBinary(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "Tiny-Model")
	mustRun(t, "synth", "--config", "../../configs/qwen2-tiny.json", "--seed", "1", "-o", ck, "-q")
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
	cache := hubEnv(t, srv)

	local := filepath.Join(dir, "local.aneb")
	mustRun(t, ck, "-o", local, "-q")
	fromHub := filepath.Join(dir, "hub.aneb")
	mustRun(t, "Org/Tiny-Model", "-o", fromHub)
	if _, err := os.Stat(filepath.Join(cache, "models--Org--Tiny-Model", "refs", "main")); err != nil {
		t.Fatalf("the Hugging Face cache layout was not written: %v", err)
	}

	compare := func(path string) {
		t.Helper()
		want, err := format.Open(local)
		if err != nil {
			t.Fatal(err)
		}
		defer want.Close()
		got, err := format.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer got.Close()
		ws, gs := want.Sections(), got.Sections()
		if len(ws) != len(gs) {
			t.Fatalf("%d sections; want %d", len(gs), len(ws))
		}
		for i := range ws {
			if ws[i].Name != gs[i].Name || ws[i].SHA256 != gs[i].SHA256 {
				t.Errorf("section %s differs from the local pack's %s", gs[i].Name, ws[i].Name)
			}
		}
		p := got.Manifest().Provenance
		if p.Source != "hf" || p.Repo != "Org/Tiny-Model" || p.Commit != commit || got.Manifest().Model.Name != "Tiny-Model" {
			t.Errorf("provenance %+v, name %q", p, got.Manifest().Model.Name)
		}
	}
	compare(fromHub)

	srv.Close()
	t.Setenv("HF_HUB_OFFLINE", "1")
	offline := filepath.Join(dir, "offline.aneb")
	mustRun(t, "Org/Tiny-Model", "-o", offline, "-q")
	compare(offline)

	// Offline with a repo that was never fetched names what is missing.
	_, errOut, code := run(t, "Org/Other-Model", "-o", filepath.Join(dir, "x.aneb"))
	if code == 0 || !strings.Contains(errOut, "Org/Other-Model") {
		t.Errorf("offline miss: exit %d, %q", code, errOut)
	}
}

// TestPackRepoWithoutConfig packs (and downloads) a Hub repo that has no config.json, a
// GGUF-only repo: anepack used to fail with "stat .../snapshots/<commit>: no such file or
// directory"; it now says the repo is not a transformers checkpoint, in one line.
func TestPackRepoWithoutConfig(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{})
	srv.MustAddRepo(t, hubtest.Repo{ID: "Org/Only-GGUF", Files: []hubtest.File{
		{Path: "README.md", Data: []byte("# quantized")},
		{Path: "model-q4.gguf", Data: []byte("GGUF")},
	}})
	hubEnv(t, srv)
	for _, args := range [][]string{{"Org/Only-GGUF", "-q", "-o", filepath.Join(t.TempDir(), "x.aneb")}, {"download", "Org/Only-GGUF", "-q"}} {
		_, errOut, code := run(t, args...)
		if code == 0 || !strings.Contains(errOut, "Org/Only-GGUF at ") ||
			!strings.Contains(errOut, "has no config.json, so it is not a transformers checkpoint") ||
			strings.Contains(errOut, "no such file") || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("anepack %q: exit %d, stderr %q", args, code, errOut)
		}
	}
}
