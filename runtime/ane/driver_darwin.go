//go:build darwin && arm64

package ane

import (
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"
	"golang.org/x/sys/unix"
)

// qos is the quality-of-service class every public ANE runtime passes (ane-facts §1.6).
const qos = uint32(21)

const (
	frameworkPath  = "/System/Library/PrivateFrameworks/AppleNeuralEngine.framework/AppleNeuralEngine"
	foundation     = "/System/Library/Frameworks/Foundation.framework/Foundation"
	ioSurfacePath  = "/System/Library/Frameworks/IOSurface.framework/IOSurface"
	coreFoundation = "/System/Library/Frameworks/CoreFoundation.framework/CoreFoundation"
	libobjc        = "/usr/lib/libobjc.A.dylib"
)

// cfuncs are the C functions the driver calls, bound once.
type cfuncs struct {
	IOSurfaceCreate         func(props objc.ID) uintptr
	IOSurfaceLock           func(s uintptr, options uint32, seed unsafe.Pointer) int32
	IOSurfaceUnlock         func(s uintptr, options uint32, seed unsafe.Pointer) int32
	IOSurfaceGetBaseAddress func(s uintptr) unsafe.Pointer
	CFRelease               func(ref uintptr)
	NSTemporaryDirectory    func() objc.ID
	PoolPush                func() uintptr
	PoolPop                 func(pool uintptr)
}

// sels caches selectors (objc.RegisterName takes the runtime lock).
var sels = struct {
	alloc, retain, release, utf8, strWithUTF8, dataWithBytes, dict, setObj, array, addObj, numU64,
	descriptor, inMemory, hexID, compiledExists, compile, load, unload, surfObj, request, eval,
	domain, code, desc objc.SEL
}{}

func registerSelectors() {
	r := objc.RegisterName
	sels.alloc, sels.retain, sels.release = r("alloc"), r("retain"), r("release")
	sels.utf8, sels.strWithUTF8 = r("UTF8String"), r("stringWithUTF8String:")
	sels.dataWithBytes = r("dataWithBytes:length:")
	sels.dict, sels.setObj = r("dictionary"), r("setObject:forKey:")
	sels.array, sels.addObj = r("array"), r("addObject:")
	sels.numU64 = r("numberWithUnsignedLongLong:")
	sels.descriptor = r("modelWithMILText:weights:optionsPlist:")
	sels.inMemory = r("inMemoryModelWithDescriptor:")
	sels.hexID = r("hexStringIdentifier")
	sels.compiledExists = r("compiledModelExists")
	sels.compile = r("compileWithQoS:options:error:")
	sels.load = r("loadWithQoS:options:error:")
	sels.unload = r("unloadWithQoS:error:")
	sels.surfObj = r("objectWithIOSurface:")
	sels.request = r("requestWithInputs:inputIndices:outputs:outputIndices:weightsBuffer:perfStats:procedureIndex:")
	sels.eval = r("evaluateWithQoS:options:request:error:")
	sels.domain, sels.code, sels.desc = r("domain"), r("code"), r("localizedDescription")
}

// Driver owns the worker thread every framework call runs on. All calls from Go go through
// do, which runs a function on that OS-thread-locked goroutine inside an autorelease pool.
type Driver struct {
	f        cfuncs
	cls      map[string]objc.Class
	work     chan func()
	mu       sync.Mutex
	compiles int
	dirs     map[string]int // staging dir -> programs using it (identical programs share an id)
}

var (
	openOnce sync.Once
	openErr  error
	shared   *Driver
)

// Open loads the frameworks, resolves the private classes and starts the worker thread. It
// returns ErrUnavailable (wrapped with the reason) when anything is missing. The driver is
// shared by the whole process.
func Open() (*Driver, error) {
	openOnce.Do(func() { shared, openErr = open() })
	return shared, openErr
}

func open() (*Driver, error) {
	d := &Driver{cls: map[string]objc.Class{}, dirs: map[string]int{}}
	handles := map[string]uintptr{}
	for _, p := range []string{libobjc, coreFoundation, foundation, ioSurfacePath, frameworkPath} {
		h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			return nil, fmt.Errorf("%w: dlopen %s: %v", ErrUnavailable, p, err)
		}
		handles[p] = h
	}
	bind := func(fptr any, lib, name string) error {
		sym, err := purego.Dlsym(handles[lib], name)
		if err != nil || sym == 0 {
			return fmt.Errorf("%w: symbol %s not found in %s", ErrUnavailable, name, lib)
		}
		purego.RegisterFunc(fptr, sym)
		return nil
	}
	for _, b := range []struct {
		fptr      any
		lib, name string
	}{
		{&d.f.IOSurfaceCreate, ioSurfacePath, "IOSurfaceCreate"},
		{&d.f.IOSurfaceLock, ioSurfacePath, "IOSurfaceLock"},
		{&d.f.IOSurfaceUnlock, ioSurfacePath, "IOSurfaceUnlock"},
		{&d.f.IOSurfaceGetBaseAddress, ioSurfacePath, "IOSurfaceGetBaseAddress"},
		{&d.f.CFRelease, coreFoundation, "CFRelease"},
		{&d.f.NSTemporaryDirectory, foundation, "NSTemporaryDirectory"},
		{&d.f.PoolPush, libobjc, "objc_autoreleasePoolPush"},
		{&d.f.PoolPop, libobjc, "objc_autoreleasePoolPop"},
	} {
		if err := bind(b.fptr, b.lib, b.name); err != nil {
			return nil, err
		}
	}
	for _, name := range append([]string{"NSString", "NSData", "NSMutableDictionary", "NSMutableArray", "NSNumber"}, Classes...) {
		c := objc.GetClass(name)
		if c == 0 {
			return nil, fmt.Errorf("%w: class %s did not resolve", ErrUnavailable, name)
		}
		d.cls[name] = c
	}
	registerSelectors()
	d.work = make(chan func())
	go d.loop()
	return d, nil
}

// loop is the worker: one locked OS thread, one autorelease pool per job.
func (d *Driver) loop() {
	goruntime.LockOSThread()
	for job := range d.work {
		pool := d.f.PoolPush()
		job()
		d.f.PoolPop(pool)
	}
}

// do runs fn on the worker thread and waits for it.
func (d *Driver) do(fn func() error) error {
	errc := make(chan error, 1)
	d.work <- func() { errc <- fn() }
	return <-errc
}

// Close does nothing: the driver and its worker thread are shared by the whole process and
// live as long as it does. Close each Program instead.
func (d *Driver) Close() error { return nil }

func (d *Driver) class(name string) objc.ID { return objc.ID(d.cls[name]) }

func (d *Driver) nsString(s string) objc.ID {
	b := append([]byte(s), 0)
	id := d.class("NSString").Send(sels.strWithUTF8, unsafe.Pointer(&b[0]))
	goruntime.KeepAlive(b)
	return id
}

func goString(ns objc.ID) string {
	if ns == 0 {
		return ""
	}
	p := objc.Send[*byte](ns, sels.utf8)
	if p == nil {
		return ""
	}
	return unix.BytePtrToString(p)
}

func (d *Driver) nsData(b []byte) objc.ID {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	id := d.class("NSData").Send(sels.dataWithBytes, p, uint64(len(b))) // copies (ane-facts §7)
	goruntime.KeepAlive(b)
	return id
}

func (d *Driver) nsNumber(v uint64) objc.ID { return d.class("NSNumber").Send(sels.numU64, v) }

func (d *Driver) nsDict() objc.ID { return d.class("NSMutableDictionary").Send(sels.dict) }

func (d *Driver) nsArray() objc.ID { return d.class("NSMutableArray").Send(sels.array) }

// nsError converts an NSError out-parameter into a Go error.
func nsError(op string, e objc.ID) error {
	if e == 0 {
		return &NSError{Op: op, Domain: "unknown", Description: "returned NO without an NSError"}
	}
	return &NSError{Op: op, Domain: goString(e.Send(sels.domain)), Code: objc.Send[int64](e, sels.code),
		Description: goString(e.Send(sels.desc))}
}

// surface is one IOSurface and its _ANEIOSurfaceObject wrapper (retained).
type surface struct {
	ref   uintptr
	obj   objc.ID
	bytes int
}

// newSurface creates a 1-D byte buffer IOSurface as every ANE runtime does (ane-facts §2.1),
// of exactly the tensor's size: every kernel's S is a multiple of 32, so each fp16 channel row
// is a whole number of 64 bytes, which is what the reported minimum sizes come down to
// (ane-facts §2.3: MDX's 8192-byte surfaces work; the 49152-byte "minimum" is GPT-2's width).
func (d *Driver) newSurface(n int) (surface, error) {
	props := d.nsDict()
	for _, kv := range []struct {
		k string
		v uint64
	}{{"IOSurfaceWidth", uint64(n)}, {"IOSurfaceHeight", 1}, {"IOSurfaceBytesPerElement", 1},
		{"IOSurfaceBytesPerRow", uint64(n)}, {"IOSurfaceAllocSize", uint64(n)}, {"IOSurfacePixelFormat", 0}} {
		props.Send(sels.setObj, d.nsNumber(kv.v), d.nsString(kv.k))
	}
	ref := d.f.IOSurfaceCreate(props)
	if ref == 0 {
		return surface{}, fmt.Errorf("ane: IOSurfaceCreate(%d bytes) failed", n)
	}
	obj := d.class("_ANEIOSurfaceObject").Send(sels.surfObj, ref)
	if obj == 0 {
		d.f.CFRelease(ref)
		return surface{}, fmt.Errorf("ane: _ANEIOSurfaceObject objectWithIOSurface: returned nil")
	}
	obj.Send(sels.retain)
	return surface{ref: ref, obj: obj, bytes: n}, nil
}

func (d *Driver) freeSurface(s surface) {
	if s.obj != 0 {
		s.obj.Send(sels.release)
	}
	if s.ref != 0 {
		d.f.CFRelease(s.ref)
	}
}

// Program is a compiled, loaded ANE program with its surfaces and request, ready to evaluate.
// Evaluations of one program are serialised.
type Program struct {
	d       *Driver
	mu      sync.Mutex
	model   objc.ID
	request objc.ID
	inputs  []surface
	outputs []surface
	dir     string
	closed  bool
}

// Compile stages, compiles (unless the daemon has it cached) and loads a program, and builds
// its request. It counts compiles against MaxCompiles.
func (d *Driver) Compile(spec Spec) (*Program, error) {
	p := &Program{d: d}
	err := d.do(func() error { return d.compile(p, spec) })
	if err != nil {
		d.do(func() error { p.release(); return nil })
		return nil, err
	}
	return p, nil
}

func (d *Driver) compile(p *Program, spec Spec) error {
	weights := d.nsDict()
	for path, blob := range spec.Weights {
		entry := d.nsDict()
		entry.Send(sels.setObj, d.nsNumber(0), d.nsString("offset"))
		entry.Send(sels.setObj, d.nsData(blob), d.nsString("data"))
		weights.Send(sels.setObj, entry, d.nsString(path))
	}
	desc := d.class("_ANEInMemoryModelDescriptor").Send(sels.descriptor, d.nsData(spec.MIL), weights, objc.ID(0))
	if desc == 0 {
		return fmt.Errorf("ane: _ANEInMemoryModelDescriptor rejected the MIL text (modelWithMILText:weights:optionsPlist: returned nil)")
	}
	model := d.class("_ANEInMemoryModel").Send(sels.inMemory, desc)
	if model == 0 {
		return fmt.Errorf("ane: inMemoryModelWithDescriptor: returned nil")
	}
	p.model = model.Send(sels.retain)
	id := goString(model.Send(sels.hexID))
	if id == "" || strings.ContainsAny(id, "/.") {
		return fmt.Errorf("ane: unexpected hexStringIdentifier %q", id)
	}
	// The compiler (in aned) reads the program from $TMPDIR/<id>/ (ane-facts §1.5).
	p.dir = filepath.Join(goString(d.f.NSTemporaryDirectory()), id)
	if err := d.stage(p.dir, spec); err != nil {
		return err
	}
	if !objc.Send[bool](model, sels.compiledExists) {
		d.mu.Lock()
		if d.compiles >= MaxCompiles {
			d.mu.Unlock()
			return ErrCompileBudget
		}
		d.compiles++
		d.mu.Unlock()
		var nserr objc.ID
		if !objc.Send[bool](model, sels.compile, qos, d.nsDict(), unsafe.Pointer(&nserr)) {
			return nsError("compileWithQoS:options:error:", nserr)
		}
	}
	if err := d.load(model); err != nil {
		return err
	}
	ins, inIdx, outs, outIdx := d.nsArray(), d.nsArray(), d.nsArray(), d.nsArray()
	for i, io := range spec.Inputs {
		s, err := d.newSurface(io.Bytes)
		if err != nil {
			return err
		}
		p.inputs = append(p.inputs, s)
		ins.Send(sels.addObj, s.obj)
		inIdx.Send(sels.addObj, d.nsNumber(uint64(i)))
	}
	for i, io := range spec.Outputs {
		s, err := d.newSurface(io.Bytes)
		if err != nil {
			return err
		}
		p.outputs = append(p.outputs, s)
		outs.Send(sels.addObj, s.obj)
		outIdx.Send(sels.addObj, d.nsNumber(uint64(i)))
	}
	req := d.class("_ANERequest").Send(sels.request, ins, inIdx, outs, outIdx, objc.ID(0), objc.ID(0), d.nsNumber(0))
	if req == 0 {
		return fmt.Errorf("ane: _ANERequest requestWithInputs:... returned nil")
	}
	p.request = req.Send(sels.retain)
	return nil
}

// load loads a compiled model, retrying once after 100 ms: a load right after other programs
// were unloaded can fail transiently (ane-facts §1.8, the maderix bridge does the same).
func (d *Driver) load(model objc.ID) error {
	var err error
	for try := 0; try < 2; try++ {
		if try > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		var nserr objc.ID
		if objc.Send[bool](model, sels.load, qos, d.nsDict(), unsafe.Pointer(&nserr)) {
			return nil
		}
		err = nsError("loadWithQoS:options:error:", nserr)
	}
	return err
}

// stage writes model.mil and the weight files where the compiler expects them.
func (d *Driver) stage(dir string, spec Spec) error {
	d.mu.Lock()
	d.dirs[dir]++
	d.mu.Unlock()
	if err := os.MkdirAll(filepath.Join(dir, "weights"), 0o755); err != nil {
		return fmt.Errorf("ane: staging %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model.mil"), spec.MIL, 0o644); err != nil {
		return err
	}
	for path, blob := range spec.Weights {
		rel, ok := strings.CutPrefix(path, "@model_path/")
		if !ok || rel != filepath.Clean(rel) || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
			return fmt.Errorf("ane: weight path %q must be @model_path/<relative path>", path)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, rel), blob, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Eval copies the inputs into their surfaces, evaluates the program synchronously and copies
// the outputs out. in[i] and out[i] must have exactly the sizes given at Compile.
func (p *Program) Eval(in, out [][]byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("ane: Eval on a closed program")
	}
	if len(in) != len(p.inputs) || len(out) != len(p.outputs) {
		return fmt.Errorf("ane: Eval with %d inputs and %d outputs; the program has %d and %d", len(in), len(out), len(p.inputs), len(p.outputs))
	}
	for i, b := range in {
		if len(b) != p.inputs[i].bytes {
			return fmt.Errorf("ane: input %d is %d bytes; its surface holds %d", i, len(b), p.inputs[i].bytes)
		}
	}
	for i, b := range out {
		if len(b) != p.outputs[i].bytes {
			return fmt.Errorf("ane: output %d is %d bytes; its surface holds %d", i, len(b), p.outputs[i].bytes)
		}
	}
	d := p.d
	return d.do(func() error {
		for i, s := range p.inputs {
			if err := d.withSurface(s, 0, func(b []byte) { copy(b, in[i]) }); err != nil {
				return err
			}
		}
		var nserr objc.ID
		if !objc.Send[bool](p.model, sels.eval, qos, d.nsDict(), p.request, unsafe.Pointer(&nserr)) {
			return nsError("evaluateWithQoS:options:request:error:", nserr)
		}
		const readOnly = 1 // kIOSurfaceLockReadOnly
		for i, s := range p.outputs {
			if err := d.withSurface(s, readOnly, func(b []byte) { copy(out[i], b) }); err != nil {
				return err
			}
		}
		return nil
	})
}

// withSurface locks s (options 0 to write, kIOSurfaceLockReadOnly to read), gives fn its bytes
// and unlocks it. A failed lock or a nil base address is an error, not a crash.
func (d *Driver) withSurface(s surface, options uint32, fn func([]byte)) error {
	if kr := d.f.IOSurfaceLock(s.ref, options, nil); kr != 0 {
		return fmt.Errorf("ane: IOSurfaceLock failed with kern_return %#x", uint32(kr))
	}
	defer d.f.IOSurfaceUnlock(s.ref, options, nil)
	base := d.f.IOSurfaceGetBaseAddress(s.ref)
	if base == nil {
		return fmt.Errorf("ane: IOSurfaceGetBaseAddress returned NULL")
	}
	fn(unsafe.Slice((*byte)(base), s.bytes))
	return nil
}

// Close unloads the program, frees its surfaces and removes its staging directory (unless an
// identical program still uses it).
func (p *Program) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	return p.d.do(func() error { return p.release() })
}

func (p *Program) release() error {
	d := p.d
	var err error
	if p.model != 0 {
		var nserr objc.ID
		if !objc.Send[bool](p.model, sels.unload, qos, unsafe.Pointer(&nserr)) {
			err = nsError("unloadWithQoS:error:", nserr)
		}
	}
	if p.request != 0 {
		p.request.Send(sels.release)
		p.request = 0
	}
	for _, s := range append(p.inputs, p.outputs...) {
		d.freeSurface(s)
	}
	p.inputs, p.outputs = nil, nil
	if p.model != 0 {
		p.model.Send(sels.release)
		p.model = 0
	}
	if p.dir != "" {
		d.mu.Lock()
		d.dirs[p.dir]--
		last := d.dirs[p.dir] <= 0
		if last {
			delete(d.dirs, p.dir)
		}
		d.mu.Unlock()
		if last {
			os.RemoveAll(p.dir)
		}
		p.dir = ""
	}
	return err
}

// Probe reports the OS, the chip and whether the framework and its classes resolve, without
// compiling anything.
func Probe() Report {
	r := Report{}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		r.OS = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	if chip, err := unix.Sysctl("machdep.cpu.brand_string"); err == nil {
		r.Chip = chip
	}
	if _, err := purego.Dlopen(frameworkPath, purego.RTLD_NOW|purego.RTLD_GLOBAL); err != nil {
		r.Reason = "dlopen AppleNeuralEngine.framework: " + err.Error()
		return r
	}
	r.Framework = true
	for _, c := range Classes {
		if objc.GetClass(c) != 0 {
			r.Classes = append(r.Classes, c)
		} else {
			r.Missing = append(r.Missing, c)
		}
	}
	if len(r.Missing) > 0 {
		r.Reason = "private classes missing: " + strings.Join(r.Missing, ", ")
		return r
	}
	d, err := Open()
	if err != nil {
		r.Reason = err.Error()
		return r
	}
	d.mu.Lock()
	r.CompileCount = d.compiles
	d.mu.Unlock()
	r.Available = true
	return r
}
