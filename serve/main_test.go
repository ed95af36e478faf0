package serve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/anepack/anepack/internal/qwentok"
	"github.com/anepack/anepack/pack"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/cpu"
	"github.com/anepack/anepack/runtime/testmodel"
	"github.com/anepack/anepack/synth"
)

// The tiny model every test serves: a SYNTH-1 checkpoint of configs/qwen2-tiny.json with the real
// Qwen tokenizer, packed the way users pack, built once per test binary.
var (
	testModel   *runtime.Model
	testBackend *cpu.Backend
	testDir     string // removed after the tests
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "anepack-serve-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	defer testmodel.Cleanup() // bundles built on demand by runtime/testmodel (TestNoChatTemplate)
	testDir = dir
	path, err := buildBundle(dir, "qwen2-tiny", nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "building the test bundle:", err)
		return 1
	}
	if testModel, err = runtime.Open(path); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer testModel.Close()
	// One thread: the machine's two cores are shared, and the tiny model gains nothing from more.
	if testBackend, err = cpu.New(testModel, cpu.Options{Threads: 1}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer testBackend.Close()
	return m.Run()
}

// buildBundle writes the checkpoint, with its tokenizer files changed by edit when it is not
// nil, and packs it into dir/name.aneb.
func buildBundle(dir, name string, edit func(files map[string][]byte) error) (string, error) {
	cfg, err := os.ReadFile(filepath.Join("..", "configs", "qwen2-tiny.json"))
	if err != nil {
		return "", err
	}
	files, err := qwentok.Files()
	if err != nil {
		return "", err
	}
	if edit != nil {
		if err := edit(files); err != nil {
			return "", err
		}
	}
	ctx := context.Background()
	ckpt := filepath.Join(dir, name)
	if err := synth.WriteCheckpoint(ctx, ckpt, cfg, files, synth.Options{Seed: 1, Workers: 1}); err != nil {
		return "", err
	}
	out := filepath.Join(dir, name+".aneb")
	if _, err := pack.Pack(ctx, ckpt, pack.Options{Output: out, Name: name}); err != nil {
		return "", err
	}
	return out, os.RemoveAll(ckpt)
}
