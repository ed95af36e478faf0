package ane

// framework is what the driver needs from AppleNeuralEngine.framework, IOSurface and
// Foundation: one method per step of the call order in docs/ane.md ("The call order"). The
// decisions around those calls (where to stage, when to compile, how to recover from a
// stale compile cache, what to unload, how large a surface is) are made by Driver and
// Program in portable code, so that they are tested on any machine with a fake framework;
// the darwin/arm64 implementation (driver_darwin.go) only translates each method into
// Objective-C messages through purego.
type framework interface {
	// run runs fn on the thread every framework call must come from (one OS thread, with an
	// autorelease pool around fn) and returns its error.
	run(fn func() error) error
	// tempDir is NSTemporaryDirectory(): the aned daemon reads programs from
	// <tempDir>/<model identifier>/.
	tempDir() string
	// newModel builds the in-memory model descriptor of MIL text and weight files (keyed by
	// the path the MIL names them with) and the model. With borrow the weight bytes stay
	// valid and unmodified until the model is released, and are handed over without a copy.
	newModel(mil []byte, weights map[string][]byte, borrow bool) (fwModel, error)
	// newSurface creates an IOSurface of size bytes and its _ANEIOSurfaceObject.
	newSurface(size int) (fwSurface, error)
	// newRequest builds the request binding the surfaces, in order, to the program's inputs
	// and outputs.
	newRequest(m fwModel, inputs, outputs []fwSurface) (fwRequest, error)
}

// fwModel is one _ANEInMemoryModel.
type fwModel interface {
	// id is hexStringIdentifier: a hash of the program, the name of its staging directory.
	id() string
	// compiledExists is compiledModelExists: the daemon holds a compiled copy.
	compiledExists() bool
	compile() error // compileWithQoS:options:error:
	load() error    // loadWithQoS:options:error:
	unload() error  // unloadWithQoS:error:
	// evaluate is evaluateWithQoS:options:request:error:, synchronous.
	evaluate(r fwRequest) error
	// release drops the model (and its descriptor and weight data).
	release()
}

// fwSurface is one IOSurface wrapped for the ANE.
type fwSurface interface {
	// write copies b to the start of the surface (locked for writing).
	write(b []byte) error
	// read copies the first len(b) bytes of the surface into b (locked read-only).
	read(b []byte) error
	release()
}

// fwRequest is one _ANERequest.
type fwRequest interface {
	release()
}
