package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anepack/anepack/hub/hubtest"
	"github.com/anepack/anepack/internal/qwentok"
	"github.com/anepack/anepack/pack"
	"github.com/anepack/anepack/synth"
)

// TestPushHF runs `anepack push` (the command, in process) against the fake Hub with its
// upload API, with the token and endpoint from the environment as users set them.
func TestPushHF(t *testing.T) {
	dir := t.TempDir()
	cfg, err := os.ReadFile(filepath.Join("..", "..", "configs", "qwen2-tiny.json"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := qwentok.Files()
	if err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "ckpt")
	if err := synth.WriteCheckpoint(context.Background(), ck, cfg, tok, synth.Options{Seed: 1}); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "tiny.aneb")
	if _, err := pack.Pack(context.Background(), ck, pack.Options{Output: bundle, NoPrograms: true}); err != nil {
		t.Fatal(err)
	}
	const token = "hf_pushtesttoken"
	srv := hubtest.New(t, hubtest.Options{Tokens: []string{token}})
	up := hubtest.NewUploads(t, srv, hubtest.UploadOptions{})
	t.Setenv("HF_ENDPOINT", up.URL)
	t.Setenv("HF_TOKEN", token)
	t.Setenv("HF_HOME", filepath.Join(dir, "hf"))
	t.Setenv("ANEPACK_HOME", filepath.Join(dir, "store"))

	cmd := newPushCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{bundle, "hf://me/tiny", "-q"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	got := strings.TrimSpace(out.String())
	if !strings.HasPrefix(got, "hf://me/tiny@") || !strings.HasSuffix(got, "/tiny.aneb") {
		t.Fatalf("push printed %q, want hf://me/tiny@<commit>/tiny.aneb", got)
	}
	if info, ok := srv.Blob("me/tiny", "main", "tiny.aneb"); !ok || !info.LFS {
		t.Fatalf("the Hub does not hold the bundle: %+v", info)
	}

	// Usage errors: a password on the command line is not accepted.
	cmd = newPushCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{bundle, "oci://localhost:1/x/y:z", "--username", "u"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--password-stdin") {
		t.Errorf("--username without --password-stdin: %v", err)
	}
}
