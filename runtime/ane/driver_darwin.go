//go:build darwin && arm64

package ane

import (
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"
	"golang.org/x/sys/unix"
)

// This file is the only place that talks to Apple's frameworks: it implements the framework
// interface (framework.go) with Objective-C messages sent through purego. What to call when is
// decided by the portable Driver; the call order and the reasons are in docs/ane.md.

// qos is the quality-of-service class every public ANE runtime passes to compile, load,
// evaluate and unload.
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
	// sendBool is objc_msgSend for selectors that return BOOL, bound once (objc.Send[bool]
	// binds a new function on every call, and evaluate is called for every program run).
	sendBool func(id objc.ID, sel objc.SEL, args ...any) bool
}

// sels caches selectors (objc.RegisterName takes the runtime lock).
var sels = struct {
	alloc, retain, release, utf8, strWithUTF8, dataWithBytes, dataNoCopy, dict, setObj, array, addObj, numU64,
	descriptor, inMemory, hexID, compiledExists, compile, load, unload, surfObj, request, eval,
	domain, code, desc objc.SEL
}{}

func registerSelectors() {
	r := objc.RegisterName
	sels.alloc, sels.retain, sels.release = r("alloc"), r("retain"), r("release")
	sels.utf8, sels.strWithUTF8 = r("UTF8String"), r("stringWithUTF8String:")
	sels.dataWithBytes = r("dataWithBytes:length:")
	sels.dataNoCopy = r("dataWithBytesNoCopy:length:freeWhenDone:")
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

// objcFramework is the framework on darwin/arm64. Every method but run must be called from
// run's thread.
type objcFramework struct {
	f    cfuncs
	cls  map[string]objc.Class
	work chan func()
	tmp  string
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
	openOnce.Do(func() {
		fw, err := openFramework()
		if err != nil {
			openErr = err
			return
		}
		shared = newDriver(fw)
	})
	return shared, openErr
}

func openFramework() (*objcFramework, error) {
	fw := &objcFramework{cls: map[string]objc.Class{}}
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
		{&fw.f.IOSurfaceCreate, ioSurfacePath, "IOSurfaceCreate"},
		{&fw.f.IOSurfaceLock, ioSurfacePath, "IOSurfaceLock"},
		{&fw.f.IOSurfaceUnlock, ioSurfacePath, "IOSurfaceUnlock"},
		{&fw.f.IOSurfaceGetBaseAddress, ioSurfacePath, "IOSurfaceGetBaseAddress"},
		{&fw.f.CFRelease, coreFoundation, "CFRelease"},
		{&fw.f.NSTemporaryDirectory, foundation, "NSTemporaryDirectory"},
		{&fw.f.PoolPush, libobjc, "objc_autoreleasePoolPush"},
		{&fw.f.PoolPop, libobjc, "objc_autoreleasePoolPop"},
		{&fw.f.sendBool, libobjc, "objc_msgSend"},
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
		fw.cls[name] = c
	}
	registerSelectors()
	fw.work = make(chan func())
	go fw.loop()
	fw.run(func() error {
		fw.tmp = goString(fw.f.NSTemporaryDirectory())
		return nil
	})
	if fw.tmp == "" {
		return nil, fmt.Errorf("%w: NSTemporaryDirectory() returned nothing", ErrUnavailable)
	}
	return fw, nil
}

// loop is the worker: one locked OS thread, one autorelease pool per job.
func (fw *objcFramework) loop() {
	goruntime.LockOSThread()
	for job := range fw.work {
		pool := fw.f.PoolPush()
		job()
		fw.f.PoolPop(pool)
	}
}

// run runs fn on the worker thread and waits for it.
func (fw *objcFramework) run(fn func() error) error {
	errc := make(chan error, 1)
	fw.work <- func() { errc <- fn() }
	return <-errc
}

func (fw *objcFramework) tempDir() string { return fw.tmp }

func (fw *objcFramework) class(name string) objc.ID { return objc.ID(fw.cls[name]) }

func (fw *objcFramework) nsString(s string) objc.ID {
	b := append([]byte(s), 0)
	id := fw.class("NSString").Send(sels.strWithUTF8, unsafe.Pointer(&b[0]))
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

// nsData wraps bytes in an NSData: without a copy when borrow says they stay valid (a mapped
// bundle; docs/ane.md, "Memory"), else as a copy.
func (fw *objcFramework) nsData(b []byte, borrow bool) objc.ID {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	var id objc.ID
	if borrow {
		id = fw.class("NSData").Send(sels.dataNoCopy, p, uint64(len(b)), false)
	} else {
		id = fw.class("NSData").Send(sels.dataWithBytes, p, uint64(len(b)))
	}
	goruntime.KeepAlive(b)
	return id
}

func (fw *objcFramework) nsNumber(v uint64) objc.ID { return fw.class("NSNumber").Send(sels.numU64, v) }

func (fw *objcFramework) nsDict() objc.ID { return fw.class("NSMutableDictionary").Send(sels.dict) }

func (fw *objcFramework) nsArray() objc.ID { return fw.class("NSMutableArray").Send(sels.array) }

// nsError converts an NSError out-parameter into a Go error.
func nsError(op string, e objc.ID) error {
	if e == 0 {
		return &NSError{Op: op, Domain: "unknown", Description: "returned NO without an NSError"}
	}
	return &NSError{Op: op, Domain: goString(e.Send(sels.domain)), Code: objc.Send[int64](e, sels.code),
		Description: goString(e.Send(sels.desc))}
}

// newModel builds the weights dictionary ({path: {"offset": 0, "data": NSData}}; an empty
// dictionary, never nil, for a program without weights), the descriptor and the model.
func (fw *objcFramework) newModel(mil []byte, weights map[string][]byte, borrow bool) (fwModel, error) {
	dict := fw.nsDict()
	for path, blob := range weights {
		entry := fw.nsDict()
		entry.Send(sels.setObj, fw.nsNumber(0), fw.nsString("offset"))
		entry.Send(sels.setObj, fw.nsData(blob, borrow), fw.nsString("data"))
		dict.Send(sels.setObj, entry, fw.nsString(path))
	}
	desc := fw.class("_ANEInMemoryModelDescriptor").Send(sels.descriptor, fw.nsData(mil, false), dict, objc.ID(0))
	if desc == 0 {
		return nil, fmt.Errorf("ane: _ANEInMemoryModelDescriptor rejected the MIL text (modelWithMILText:weights:optionsPlist: returned nil)")
	}
	model := fw.class("_ANEInMemoryModel").Send(sels.inMemory, desc)
	if model == 0 {
		return nil, fmt.Errorf("ane: inMemoryModelWithDescriptor: returned nil")
	}
	return &objcModel{fw: fw, m: model.Send(sels.retain)}, nil
}

// objcModel is a retained _ANEInMemoryModel.
type objcModel struct {
	fw *objcFramework
	m  objc.ID
}

func (m *objcModel) id() string { return goString(m.m.Send(sels.hexID)) }

func (m *objcModel) compiledExists() bool { return m.fw.f.sendBool(m.m, sels.compiledExists) }

// call sends a selector taking (qos, options, NSError**) or (qos, NSError**).
func (m *objcModel) call(op string, sel objc.SEL, withOptions bool) error {
	var nserr objc.ID
	var ok bool
	if withOptions {
		ok = m.fw.f.sendBool(m.m, sel, qos, m.fw.nsDict(), unsafe.Pointer(&nserr))
	} else {
		ok = m.fw.f.sendBool(m.m, sel, qos, unsafe.Pointer(&nserr))
	}
	if !ok {
		return nsError(op, nserr)
	}
	return nil
}

func (m *objcModel) compile() error {
	return m.call("compileWithQoS:options:error:", sels.compile, true)
}

func (m *objcModel) load() error { return m.call("loadWithQoS:options:error:", sels.load, true) }

func (m *objcModel) unload() error { return m.call("unloadWithQoS:error:", sels.unload, false) }

func (m *objcModel) evaluate(r fwRequest) error {
	var nserr objc.ID
	if !m.fw.f.sendBool(m.m, sels.eval, qos, m.fw.nsDict(), r.(*objcRequest).r, unsafe.Pointer(&nserr)) {
		return nsError("evaluateWithQoS:options:request:error:", nserr)
	}
	return nil
}

func (m *objcModel) release() {
	if m.m != 0 {
		m.m.Send(sels.release)
		m.m = 0
	}
}

// objcSurface is one IOSurface and its retained _ANEIOSurfaceObject.
type objcSurface struct {
	fw   *objcFramework
	ref  uintptr
	obj  objc.ID
	size int
}

// newSurface creates a 1-D byte buffer IOSurface of size bytes, as every ANE runtime that ran
// on hardware does (docs/ane.md, "Surfaces").
func (fw *objcFramework) newSurface(size int) (fwSurface, error) {
	props := fw.nsDict()
	for _, kv := range []struct {
		k string
		v uint64
	}{{"IOSurfaceWidth", uint64(size)}, {"IOSurfaceHeight", 1}, {"IOSurfaceBytesPerElement", 1},
		{"IOSurfaceBytesPerRow", uint64(size)}, {"IOSurfaceAllocSize", uint64(size)}, {"IOSurfacePixelFormat", 0}} {
		props.Send(sels.setObj, fw.nsNumber(kv.v), fw.nsString(kv.k))
	}
	ref := fw.f.IOSurfaceCreate(props)
	if ref == 0 {
		return nil, fmt.Errorf("ane: IOSurfaceCreate(%d bytes) failed", size)
	}
	obj := fw.class("_ANEIOSurfaceObject").Send(sels.surfObj, ref)
	if obj == 0 {
		fw.f.CFRelease(ref)
		return nil, fmt.Errorf("ane: _ANEIOSurfaceObject objectWithIOSurface: returned nil")
	}
	return &objcSurface{fw: fw, ref: ref, obj: obj.Send(sels.retain), size: size}, nil
}

// with locks the surface (options 0 to write, kIOSurfaceLockReadOnly to read), gives fn its
// first n bytes and unlocks it. A failed lock or a nil base address is an error, not a crash.
func (s *objcSurface) with(options uint32, n int, fn func([]byte)) error {
	if n > s.size {
		return fmt.Errorf("ane: %d bytes do not fit a %d-byte surface", n, s.size)
	}
	if kr := s.fw.f.IOSurfaceLock(s.ref, options, nil); kr != 0 {
		return fmt.Errorf("ane: IOSurfaceLock failed with kern_return %#x", uint32(kr))
	}
	defer s.fw.f.IOSurfaceUnlock(s.ref, options, nil)
	base := s.fw.f.IOSurfaceGetBaseAddress(s.ref)
	if base == nil {
		return fmt.Errorf("ane: IOSurfaceGetBaseAddress returned NULL")
	}
	fn(unsafe.Slice((*byte)(base), n))
	return nil
}

func (s *objcSurface) write(b []byte) error {
	return s.with(0, len(b), func(dst []byte) { copy(dst, b) })
}

func (s *objcSurface) read(b []byte) error {
	const readOnly = 1 // kIOSurfaceLockReadOnly
	return s.with(readOnly, len(b), func(src []byte) { copy(b, src) })
}

func (s *objcSurface) release() {
	if s.obj != 0 {
		s.obj.Send(sels.release)
		s.obj = 0
	}
	if s.ref != 0 {
		s.fw.f.CFRelease(s.ref)
		s.ref = 0
	}
}

// objcRequest is a retained _ANERequest.
type objcRequest struct{ r objc.ID }

func (r *objcRequest) release() {
	if r.r != 0 {
		r.r.Send(sels.release)
		r.r = 0
	}
}

// newRequest binds the surfaces to input and output indices 0..n-1, procedure 0.
func (fw *objcFramework) newRequest(m fwModel, inputs, outputs []fwSurface) (fwRequest, error) {
	ins, inIdx, outs, outIdx := fw.nsArray(), fw.nsArray(), fw.nsArray(), fw.nsArray()
	for i, s := range inputs {
		ins.Send(sels.addObj, s.(*objcSurface).obj)
		inIdx.Send(sels.addObj, fw.nsNumber(uint64(i)))
	}
	for i, s := range outputs {
		outs.Send(sels.addObj, s.(*objcSurface).obj)
		outIdx.Send(sels.addObj, fw.nsNumber(uint64(i)))
	}
	req := fw.class("_ANERequest").Send(sels.request, ins, inIdx, outs, outIdx, objc.ID(0), objc.ID(0), fw.nsNumber(0))
	if req == 0 {
		return nil, fmt.Errorf("ane: _ANERequest requestWithInputs:... returned nil")
	}
	return &objcRequest{r: req.Send(sels.retain)}, nil
}

// Probe reports the OS, its build, the chip and whether the framework and its classes
// resolve, without compiling anything.
func Probe() Report {
	r := Report{}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		r.OS = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	if b, err := unix.Sysctl("kern.osversion"); err == nil {
		r.OSBuild = b
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
	r.CompileCount = d.Counts().Compiles
	r.Available = true
	return r
}
