package remote

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/anepack/anepack/internal/qwentok"
	"github.com/anepack/anepack/pack"
	"github.com/anepack/anepack/synth"
)

var (
	bundleOnce sync.Once
	bundleDir  string
	bundleErr  error
)

// TestMain removes the bundles built for the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if bundleDir != "" {
		os.RemoveAll(bundleDir)
	}
	os.Exit(code)
}

// buildBundle writes a SYNTH-1 checkpoint for configs/<config>.json and packs it.
func buildBundle(ctx context.Context, dir, config string, seed uint64, out string) error {
	cfg, err := os.ReadFile(filepath.Join("..", "configs", config+".json"))
	if err != nil {
		return err
	}
	tok, err := qwentok.Files()
	if err != nil {
		return err
	}
	ck := filepath.Join(dir, config+"-ckpt")
	if err := synth.WriteCheckpoint(ctx, ck, cfg, tok, synth.Options{Seed: seed}); err != nil {
		return err
	}
	defer os.RemoveAll(ck)
	_, err = pack.Pack(ctx, ck, pack.Options{Output: out, Name: strings.TrimSuffix(filepath.Base(out), ".aneb")})
	return err
}

// tinyBundle is a real bundle of the qwen2-tiny config (36 MiB), built once per test binary.
func tinyBundle(t testing.TB) string {
	t.Helper()
	bundleOnce.Do(func() {
		bundleDir, bundleErr = os.MkdirTemp("", "remote-test-")
		if bundleErr == nil {
			bundleErr = buildBundle(context.Background(), bundleDir, "qwen2-tiny", 1, filepath.Join(bundleDir, "tiny.aneb"))
		}
	})
	if bundleErr != nil {
		t.Fatal(bundleErr)
	}
	return filepath.Join(bundleDir, "tiny.aneb")
}
