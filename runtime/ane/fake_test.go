package ane

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anepack/anepack/blobfile"
	"github.com/anepack/anepack/mil"
)

// fakeDaemon is the state of a fake aned that outlives processes: which programs it has
// compiled, which of those it has lost (compiledExists still says yes, the load fails), and
// every call made to it. Programs are executed by the MIL simulator from the files the driver
// staged, so a test sees exactly what the compiler would have read.
type fakeDaemon struct {
	mu       sync.Mutex
	compiled map[string]*mil.Executable // what the daemon compiled, by identifier
	lost     map[string]bool            // compiledExists yes, load fails (purged cache, OS update)
	// milOnlyID makes the identifier hash the MIL text only (one report says it does).
	milOnlyID bool
	// oneRecordOnly fails compiles of weight files with several records or BLOBFILE offsets
	// other than 64, as an M1 report says the ANE does.
	oneRecordOnly bool
	failCompile   func(id string) error
	failLoad      func(id string) error
	calls         []string
	unloadBad     int // unloads of a model that was not loaded
	newModels     []fakeNewModel
}

// fakeNewModel records one newModel call.
type fakeNewModel struct {
	mil     string
	weights map[string][]byte
	borrow  bool
}

func newFakeDaemon() *fakeDaemon {
	return &fakeDaemon{compiled: map[string]*mil.Executable{}, lost: map[string]bool{}}
}

func (d *fakeDaemon) log(format string, args ...any) {
	d.mu.Lock()
	d.calls = append(d.calls, fmt.Sprintf(format, args...))
	d.mu.Unlock()
}

// count returns how many calls start with prefix.
func (d *fakeDaemon) count(prefix string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// fakeFramework is one process's view of the fake framework.
type fakeFramework struct {
	daemon   *fakeDaemon
	tmp      string
	mu       sync.Mutex
	surfaces []*fakeSurface
}

// newFakeDriver returns a driver over the fake framework whose temporary directory is tmp: a
// new process of the same machine when daemon is shared.
func newFakeDriver(daemon *fakeDaemon, tmp string) (*Driver, *fakeFramework) {
	fw := &fakeFramework{daemon: daemon, tmp: tmp}
	d := newDriver(fw)
	d.sleep = func(time.Duration) {}
	return d, fw
}

func (fw *fakeFramework) run(fn func() error) error { return fn() }

func (fw *fakeFramework) tempDir() string { return fw.tmp }

func (fw *fakeFramework) newModel(text []byte, weights map[string][]byte, borrow bool) (fwModel, error) {
	d := fw.daemon
	d.mu.Lock()
	d.newModels = append(d.newModels, fakeNewModel{mil: string(text), weights: weights, borrow: borrow})
	d.mu.Unlock()
	h := sha256.New()
	h.Write(text)
	if !d.milOnlyID {
		keys := make([]string, 0, len(weights))
		for k := range weights {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			var n [8]byte
			binary.LittleEndian.PutUint64(n[:], uint64(len(weights[k])))
			h.Write([]byte(k))
			h.Write(n[:])
			h.Write(weights[k])
		}
	}
	m := &fakeModel{fw: fw, hex: strings.ToUpper(hex.EncodeToString(h.Sum(nil)[:16]))}
	d.log("newModel %s", m.hex)
	return m, nil
}

func (fw *fakeFramework) newSurface(size int) (fwSurface, error) {
	s := &fakeSurface{buf: make([]byte, size)}
	for i := range s.buf {
		s.buf[i] = 0xA5 // what lies beyond a tensor must stay untouched
	}
	fw.mu.Lock()
	fw.surfaces = append(fw.surfaces, s)
	fw.mu.Unlock()
	return s, nil
}

func (fw *fakeFramework) newRequest(m fwModel, inputs, outputs []fwSurface) (fwRequest, error) {
	r := &fakeRequest{}
	for _, s := range inputs {
		r.in = append(r.in, s.(*fakeSurface))
	}
	for _, s := range outputs {
		r.out = append(r.out, s.(*fakeSurface))
	}
	return r, nil
}

// fakeModel compiles by running the simulator's compiler on the staged files.
type fakeModel struct {
	fw       *fakeFramework
	hex      string
	exe      *mil.Executable
	loaded   bool
	released bool
}

func (m *fakeModel) id() string { return m.hex }

func (m *fakeModel) dir() string { return filepath.Join(m.fw.tmp, m.hex) }

// compiledExists is true when the daemon compiled the program and its staging directory
// still holds the compiled output (net.plist, which the real compiler writes there).
func (m *fakeModel) compiledExists() bool {
	d := m.fw.daemon
	d.mu.Lock()
	ok := d.compiled[m.hex] != nil
	d.mu.Unlock()
	_, err := os.Stat(filepath.Join(m.dir(), "net.plist"))
	m.fw.daemon.log("compiledExists %s %v", m.hex, ok && err == nil)
	return ok && err == nil
}

// readStaged compiles the program from what the driver staged.
func (m *fakeModel) readStaged() (*mil.Executable, error) {
	text, err := os.ReadFile(filepath.Join(m.dir(), "model.mil"))
	if err != nil {
		return nil, err
	}
	p, err := mil.Parse(text)
	if err != nil {
		return nil, err
	}
	weights := map[string][]byte{}
	err = filepath.WalkDir(filepath.Join(m.dir(), "weights"), func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(m.dir(), path)
		weights["@model_path/"+filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return p.Compile(weights)
}

func (m *fakeModel) compile() error {
	d := m.fw.daemon
	d.log("compile %s", m.hex)
	if d.failCompile != nil {
		if err := d.failCompile(m.hex); err != nil {
			return err
		}
	}
	if d.oneRecordOnly {
		if err := m.checkOneRecord(); err != nil {
			return &NSError{Op: "compileWithQoS:options:error:", Domain: "com.apple.appleneuralengine", Code: 10, Description: "InvalidMILProgram: " + err.Error()}
		}
	}
	exe, err := m.readStaged()
	if err != nil {
		return &NSError{Op: "compileWithQoS:options:error:", Domain: "com.apple.appleneuralengine", Code: 10, Description: "InvalidMILProgram: " + err.Error()}
	}
	if err := os.WriteFile(filepath.Join(m.dir(), "net.plist"), []byte("compiled "+m.hex), 0o644); err != nil {
		return err
	}
	d.mu.Lock()
	d.compiled[m.hex] = exe
	delete(d.lost, m.hex)
	d.mu.Unlock()
	return nil
}

var blobOffset = regexp.MustCompile(`offset = (?:uint64|tensor<uint64, \[\]>)\((\w+)\)`)

// checkOneRecord refuses what the M1 report says fails: several records in a weight file, or
// a BLOBFILE offset other than 64.
func (m *fakeModel) checkOneRecord() error {
	text, err := os.ReadFile(filepath.Join(m.dir(), "model.mil"))
	if err != nil {
		return err
	}
	for _, sub := range blobOffset.FindAllStringSubmatch(string(text), -1) {
		if sub[1] != "64" {
			return fmt.Errorf("BLOBFILE offset %s", sub[1])
		}
	}
	return filepath.WalkDir(filepath.Join(m.dir(), "weights"), func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if f, err := blobfile.Parse(b); err != nil || f.Count != 1 {
			return fmt.Errorf("weight file %s holds several records", filepath.Base(path))
		}
		return nil
	})
}

func (m *fakeModel) load() error {
	d := m.fw.daemon
	d.log("load %s", m.hex)
	d.mu.Lock()
	exe, lost := d.compiled[m.hex], d.lost[m.hex]
	d.mu.Unlock()
	if d.failLoad != nil {
		if err := d.failLoad(m.hex); err != nil {
			return err
		}
	}
	if exe == nil || lost {
		return &NSError{Op: "loadWithQoS:options:error:", Domain: "com.apple.appleneuralengine", Code: 6, Description: "Program load failure"}
	}
	m.exe, m.loaded = exe, true
	return nil
}

func (m *fakeModel) unload() error {
	d := m.fw.daemon
	d.log("unload %s", m.hex)
	if !m.loaded {
		d.mu.Lock()
		d.unloadBad++
		d.mu.Unlock()
		return &NSError{Op: "unloadWithQoS:error:", Domain: "com.apple.appleneuralengine", Code: 6, Description: "not loaded"}
	}
	m.loaded = false
	return nil
}

// evaluate reads each input's tensor from the start of its surface and writes each output's
// tensor to the start of its surface, as the ANE does with [1, C, 1, S] fp16 tensors.
func (m *fakeModel) evaluate(r fwRequest) error {
	m.fw.daemon.log("evaluate %s", m.hex)
	if !m.loaded {
		return errors.New("fake: evaluate before load")
	}
	req := r.(*fakeRequest)
	in := make([][]uint16, len(req.in))
	for i, io := range m.exe.Inputs() {
		in[i] = make([]uint16, io.Type.Elements())
		for j := range in[i] {
			in[i][j] = binary.LittleEndian.Uint16(req.in[i].buf[2*j:])
		}
	}
	out := make([][]uint16, len(req.out))
	for i, io := range m.exe.Outputs() {
		out[i] = make([]uint16, io.Type.Elements())
	}
	if err := m.exe.Eval(in, out); err != nil {
		return err
	}
	for i := range out {
		for j, v := range out[i] {
			binary.LittleEndian.PutUint16(req.out[i].buf[2*j:], v)
		}
	}
	return nil
}

func (m *fakeModel) release() {
	m.fw.daemon.log("release %s", m.hex)
	m.released = true
}

// fakeSurface records the spans written and read.
type fakeSurface struct {
	buf      []byte
	written  []int // lengths of the writes, each at offset 0
	released bool
}

func (s *fakeSurface) write(b []byte) error {
	if len(b) > len(s.buf) {
		return fmt.Errorf("fake: %d bytes into a %d-byte surface", len(b), len(s.buf))
	}
	copy(s.buf, b)
	s.written = append(s.written, len(b))
	return nil
}

func (s *fakeSurface) read(b []byte) error {
	if len(b) > len(s.buf) {
		return fmt.Errorf("fake: %d bytes from a %d-byte surface", len(b), len(s.buf))
	}
	copy(b, s.buf)
	return nil
}

func (s *fakeSurface) release() { s.released = true }

type fakeRequest struct{ in, out []*fakeSurface }

func (r *fakeRequest) release() {}
