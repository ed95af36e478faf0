package ane

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/anepack/anepack/mil"
)

// probeCase builds the probe program called name.
func probeCase(t *testing.T, name string) *ProbeProgram {
	t.Helper()
	for _, c := range ProbePrograms() {
		if c.Name == name {
			return c.Build()
		}
	}
	t.Fatalf("no probe program %q", name)
	return nil
}

// evalProbe compiles p on d, evaluates it once and checks the result.
func evalProbe(t *testing.T, d *Driver, p *ProbeProgram) *Program {
	t.Helper()
	prog, err := d.Compile(p.Spec())
	if err != nil {
		t.Fatalf("%s: %v", p.Name, err)
	}
	out := make([]uint16, p.Out.Bytes/2)
	if err := prog.Eval([][]byte{u16Bytes(p.X)}, [][]byte{u16Bytes(out)}); err != nil {
		t.Fatalf("%s: Eval: %v", p.Name, err)
	}
	if rel, ok := p.Check(out); !ok {
		t.Fatalf("%s: result off by %.3g", p.Name, rel)
	}
	return prog
}

// inode identifies a file's version: staging rewrites a file by rename, which changes it.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestCompileCacheSurvivesClose: a program's staging directory (with the compiled program in
// it) stays after Close, so that the next process loads it without compiling and without
// writing a file; only a loaded model is unloaded.
func TestCompileCacheSurvivesClose(t *testing.T) {
	daemon, tmp := newFakeDaemon(), t.TempDir()
	d, _ := newFakeDriver(daemon, tmp)
	p := probeCase(t, selfTestName)
	prog := evalProbe(t, d, p)
	dir := prog.dir
	if err := prog.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"model.mil", "weights/w.bin", "net.plist", stagingMarker} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("after Close: %v", err)
		}
	}
	if c := d.Counts(); c.Compiles != 1 || c.CacheLoads != 0 {
		t.Errorf("first process: %+v", c)
	}
	weights := inode(t, filepath.Join(dir, "weights/w.bin"))

	d2, _ := newFakeDriver(daemon, tmp) // the next process
	prog = evalProbe(t, d2, p)
	if c := d2.Counts(); c.Compiles != 0 || c.CacheLoads != 1 {
		t.Errorf("second process: %+v; want a cache load and no compile", c)
	}
	if inode(t, filepath.Join(dir, "weights/w.bin")) != weights {
		t.Error("a warm start rewrote the staged weights")
	}
	prog.Close()
	if n := daemon.count("unload"); n != 2 || daemon.unloadBad != 0 {
		t.Errorf("%d unloads, %d of a model that was not loaded; want 2 and 0", n, daemon.unloadBad)
	}
}

// TestCacheMissRecovers: the daemon lost a program that compiledModelExists still reports
// (an OS update, a purged cache): the load fails (and is retried once), the directory is
// staged afresh, and the program is compiled and loaded, once.
func TestCacheMissRecovers(t *testing.T) {
	daemon, tmp := newFakeDaemon(), t.TempDir()
	d, _ := newFakeDriver(daemon, tmp)
	p := probeCase(t, selfTestName)
	prog := evalProbe(t, d, p)
	id, dir := filepath.Base(prog.dir), prog.dir
	prog.Close()
	daemon.lost[id] = true
	os.WriteFile(filepath.Join(dir, "stale-output"), []byte("from before the OS update"), 0o644)

	loads, releases := daemon.count("load "+id), daemon.count("release "+id)
	d2, _ := newFakeDriver(daemon, tmp)
	prog = evalProbe(t, d2, p)
	if c := d2.Counts(); c.Recoveries != 1 || c.Compiles != 1 || c.CacheLoads != 0 {
		t.Errorf("counts %+v; want one recovery and one compile", c)
	}
	if _, err := os.Stat(filepath.Join(dir, "stale-output")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the stale directory was not removed before compiling again")
	}
	// compiledExists (first model), load and its retry fail, then compile and load (new model).
	if n := daemon.count("load "+id) - loads; n != 3 {
		t.Errorf("%d loads; want 3 (failed, retried, after the compile)", n)
	}
	if n := daemon.count("release "+id) - releases; n != 1 {
		t.Errorf("%d models released before the program closed; want the stale one", n)
	}

	// A second failure after the recompile is reported, not looped on.
	prog.Close()
	daemon.lost[id] = true
	daemon.failCompile = func(string) error { return errors.New("compiler gone") }
	d3, _ := newFakeDriver(daemon, tmp)
	if _, err := d3.Compile(p.Spec()); err == nil || !strings.Contains(err.Error(), "compiler gone") {
		t.Errorf("compile after a failed cache load: %v", err)
	}
	if c := d3.Counts(); c.Recoveries != 1 || c.Compiles != 1 {
		t.Errorf("counts %+v", c)
	}
	if daemon.unloadBad != 0 {
		t.Errorf("%d unloads of models that were not loaded", daemon.unloadBad)
	}
}

// TestUnloadOnlyLoaded: a failed compile or load releases the model without unloading it, and
// a failed compile leaves no staging directory behind.
func TestUnloadOnlyLoaded(t *testing.T) {
	daemon, tmp := newFakeDriver2(t)
	p := probeCase(t, selfTestName)
	daemon.failCompile = func(string) error {
		return &NSError{Op: "compileWithQoS:options:error:", Code: 4, Description: "program creation failure"}
	}
	d, _ := newFakeDriver(daemon, tmp)
	if _, err := d.Compile(p.Spec()); err == nil || !strings.Contains(err.Error(), "program creation failure") {
		t.Fatalf("compile failure: %v", err)
	}
	if n := daemon.count("unload"); n != 0 {
		t.Errorf("%d unloads after a failed compile", n)
	}
	if n := daemon.count("release"); n != 1 {
		t.Errorf("%d releases; want the model released once", n)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("a failed compile left %d staging directories", len(entries))
	}

	daemon.failCompile = nil
	daemon.failLoad = func(string) error {
		return &NSError{Op: "loadWithQoS:options:error:", Code: 6, Description: "program load failure"}
	}
	if _, err := d.Compile(p.Spec()); err == nil || !strings.Contains(err.Error(), "program load failure") {
		t.Fatalf("load failure: %v", err)
	}
	if n := daemon.count("unload"); n != 0 || daemon.unloadBad != 0 {
		t.Errorf("%d unloads after a failed load", n)
	}
}

// newFakeDriver2 returns a fresh daemon and temporary directory.
func newFakeDriver2(t *testing.T) (*fakeDaemon, string) { return newFakeDaemon(), t.TempDir() }

// TestStaleStagingDirectory: when the identifier does not cover the weights (one report says
// it hashes the MIL text only), two programs that differ in their weights share a directory;
// the second finds other files there and must compile rather than load the first's program.
func TestStaleStagingDirectory(t *testing.T) {
	daemon, tmp := newFakeDriver2(t)
	daemon.milOnlyID = true
	d, _ := newFakeDriver(daemon, tmp)
	a := probeCase(t, "fp16-896-"+mil.LayoutPacked)
	prog := evalProbe(t, d, a)
	prog.Close()
	b := probeCase(t, "fp16-896-"+mil.LayoutPacked)
	b.Blobs = map[string][]byte{probeWeightPath: append([]byte(nil), a.Blobs[probeWeightPath]...)}
	w := b.Blobs[probeWeightPath]
	for i := 128; i < 128+2*896*896; i += 2 { // negate w1: y changes sign
		w[i+1] ^= 0x80
	}
	for i := range b.Want {
		b.Want[i] = -b.Want[i]
	}
	prog = evalProbe(t, d, b)
	defer prog.Close()
	if c := d.Counts(); c.Stale != 1 || c.Compiles != 2 || c.CacheLoads != 0 {
		t.Errorf("counts %+v; want the second program compiled as stale", c)
	}
}

// TestSurfaces: every surface is at least 64 KiB (4 KiB tensors included) unless the spec asks
// for exact sizes; the tensor is written at offset 0 with its own size, and nothing beyond it
// is touched.
func TestSurfaces(t *testing.T) {
	for _, c := range []struct {
		name string
		want []int // input surface, output surface
	}{
		{selfTestName, []int{64 << 10, 64 << 10}},
		{"surface-4k", []int{4096, 4096}},
	} {
		daemon, tmp := newFakeDriver2(t)
		d, fw := newFakeDriver(daemon, tmp)
		p := probeCase(t, c.name)
		prog := evalProbe(t, d, p)
		if len(fw.surfaces) != 2 || len(fw.surfaces[0].buf) != c.want[0] || len(fw.surfaces[1].buf) != c.want[1] {
			t.Errorf("%s: surfaces of %d and %d bytes; want %v", c.name, len(fw.surfaces[0].buf), len(fw.surfaces[1].buf), c.want)
		}
		in := fw.surfaces[0]
		if len(in.written) != 1 || in.written[0] != p.In.Bytes {
			t.Errorf("%s: writes %v; want one of %d bytes", c.name, in.written, p.In.Bytes)
		}
		for i := p.In.Bytes; i < len(in.buf); i++ {
			if in.buf[i] != 0xA5 {
				t.Fatalf("%s: byte %d beyond the tensor was overwritten", c.name, i)
			}
		}
		prog.Close()
		for _, s := range fw.surfaces {
			if !s.released {
				t.Errorf("%s: surface not released", c.name)
			}
		}
	}
	if surfaceSize(100<<10, false) != 100<<10 || surfaceSize(1, false) != 64<<10 || surfaceSize(4096, true) != 4096 {
		t.Error("surfaceSize")
	}
}

// TestSplitLayoutAndBorrow: with the split layout the framework receives one record per file
// at offset 64, as copies; with the packed layout it receives the spec's own bytes, borrowed
// when the spec says they are mapped.
func TestSplitLayoutAndBorrow(t *testing.T) {
	daemon, tmp := newFakeDriver2(t)
	d, _ := newFakeDriver(daemon, tmp)
	split := probeCase(t, "uint4-896-"+mil.LayoutSplit)
	spec := split.Spec()
	spec.Borrow = true // the split files are new copies: the framework must copy them
	prog, err := d.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	prog.Close()
	nm := daemon.newModels[len(daemon.newModels)-1]
	if len(nm.weights) != 3 || nm.borrow {
		t.Errorf("split: %d files, borrow %v; want 3 copied files", len(nm.weights), nm.borrow)
	}
	refs := strings.Count(nm.mil, "BLOBFILE(")
	if refs != 3 || strings.Count(nm.mil, "offset = uint64(64)") != 3 {
		t.Errorf("split MIL names %d blobs, %d at offset 64", refs, strings.Count(nm.mil, "offset = uint64(64)"))
	}

	packed := probeCase(t, "uint4-896-"+mil.LayoutPacked)
	spec = packed.Spec()
	spec.Borrow = true
	p2, err := d.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	nm = daemon.newModels[len(daemon.newModels)-1]
	if got := nm.weights[probeWeightPath]; !nm.borrow || len(nm.weights) != 1 || &got[0] != &packed.Blobs[probeWeightPath][0] {
		t.Errorf("packed: borrow %v, %d files, same bytes %v", nm.borrow, len(nm.weights), &got[0] == &packed.Blobs[probeWeightPath][0])
	}
	if _, err := d.Compile(Spec{MIL: spec.MIL, Weights: spec.Weights, Inputs: spec.Inputs, Outputs: spec.Outputs, Layout: "tiled"}); err == nil || !strings.Contains(err.Error(), `blob layout "tiled"`) {
		t.Errorf("unknown layout: %v", err)
	}
}

// TestCompileBudget: compiles count against MaxCompiles; loads from the cache do not.
func TestDriverCompileBudget(t *testing.T) {
	daemon, tmp := newFakeDriver2(t)
	d, _ := newFakeDriver(daemon, tmp)
	p := probeCase(t, selfTestName)
	d.counts.Compiles = MaxCompiles - 1
	prog := evalProbe(t, d, p)
	prog.Close()
	prog = evalProbe(t, d, p) // from the cache
	prog.Close()
	q := probeCase(t, "surface-4k") // the same program text and weights: the cache serves it too
	evalProbe(t, d, q).Close()
	other := probeCase(t, "fp16-896-"+mil.LayoutPacked)
	if _, err := d.Compile(other.Spec()); !errors.Is(err, ErrCompileBudget) {
		t.Errorf("past the budget: %v", err)
	}
	if c := d.Counts(); c.Compiles != MaxCompiles || c.CacheLoads != 2 {
		t.Errorf("counts %+v", c)
	}
}

// TestSharedStagingDirectory: identical programs share a staging directory; closing one
// leaves it for the other, and a recovery while the other is loaded does not remove it.
func TestSharedStagingDirectory(t *testing.T) {
	daemon, tmp := newFakeDriver2(t)
	d, _ := newFakeDriver(daemon, tmp)
	p := probeCase(t, selfTestName)
	a := evalProbe(t, d, p)
	b := evalProbe(t, d, p)
	if a.dir != b.dir || d.live[a.dir] != 2 {
		t.Fatalf("dirs %s and %s, %d users", a.dir, b.dir, d.live[a.dir])
	}
	daemon.lost[filepath.Base(a.dir)] = true
	c := evalProbe(t, d, p) // recovers without removing the directory a and b use
	if _, err := os.Stat(filepath.Join(a.dir, "model.mil")); err != nil {
		t.Error(err)
	}
	for _, prog := range []*Program{a, b, c} {
		prog.Close()
	}
	if len(d.live) != 0 {
		t.Errorf("users left: %v", d.live)
	}
}

// TestClearCache removes the staging directories and nothing else.
func TestClearCache(t *testing.T) {
	daemon, tmp := newFakeDriver2(t)
	d, _ := newFakeDriver(daemon, tmp)
	for _, name := range []string{selfTestName, "int8-896"} {
		evalProbe(t, d, probeCase(t, name)).Close()
	}
	foreign := filepath.Join(tmp, "not-ours")
	os.MkdirAll(foreign, 0o755)
	os.WriteFile(filepath.Join(tmp, "file"), []byte("x"), 0o644)
	if n, size := CacheSize(tmp); n != 2 || size < 896*896 {
		t.Errorf("CacheSize: %d directories, %d bytes", n, size)
	}
	n, size, err := ClearCache(tmp)
	if err != nil || n != 2 || size < 896*896 {
		t.Fatalf("ClearCache: %d, %d, %v", n, size, err)
	}
	entries, _ := os.ReadDir(tmp)
	if len(entries) != 2 {
		t.Errorf("left %d entries; want the foreign directory and file", len(entries))
	}
	if n, _, err := ClearCache(filepath.Join(tmp, "missing")); n != 0 || err != nil {
		t.Errorf("missing root: %d, %v", n, err)
	}
}

// TestStageRefusesBadPaths: weight paths must stay inside the staging directory.
func TestStageRefusesBadPaths(t *testing.T) {
	for _, path := range []string{"weights/w.bin", "@model_path/../w.bin", "@model_path//abs", "@model_path/a/../../b", "@model_path/model.mil", "@model_path/"} {
		_, err := stage(filepath.Join(t.TempDir(), "d"), Spec{MIL: []byte("x"), Weights: map[string][]byte{path: {1}}})
		if err == nil || !strings.Contains(err.Error(), "@model_path/<relative path>") {
			t.Errorf("%q: %v", path, err)
		}
	}
}
