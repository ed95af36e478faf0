// Package ane runs MIL programs on the Apple Neural Engine through Apple's private
// AppleNeuralEngine.framework, reached with purego (no cgo): it stages a program's MIL text and
// weight blobs, compiles and loads it in the aned daemon, wraps inputs and outputs in
// IOSurfaces, and evaluates requests. Everything that can be pure Go (MIL generation, blob
// layout, the simulator) lives in package mil; this package is only the thin driver.
//
// The driver exists on darwin/arm64 only. On every other platform [Open] returns
// [ErrUnavailable], and the sim backend executes the same programs in Go.
//
// Nothing here has run on Apple hardware yet: the sequence of calls follows the public ANE
// research runtimes as summarised in shared/ane-facts.md §1-3, and is checked by
// cross-compilation only.
package ane

import (
	"errors"
	"fmt"
)

// ErrUnavailable is returned where the ANE cannot be used: another OS or CPU, or the private
// framework or its classes could not be loaded.
var ErrUnavailable = errors.New("ane: the Apple Neural Engine is not available on this machine")

// ErrCompileBudget is returned when a process has used its compile budget: the ANE compiler
// leaks resources and fails after about 119 compiles per process (ane-facts §1.8). Programs the
// daemon has already compiled (from an earlier run) load without compiling, so a caller can
// restart the process and continue.
var ErrCompileBudget = errors.New("ane: compile budget of this process is used up (about 119 compiles); restart the process to continue from the daemon's compile cache")

// MaxCompiles is the number of compiles this package allows per process, below the ~119 at which
// the ANE compiler starts failing.
const MaxCompiles = 100

// NSError is an error reported by the framework, with the NSError's domain, code and description.
type NSError struct {
	Op          string // the selector that failed, e.g. "compileWithQoS:options:error:"
	Domain      string
	Code        int64
	Description string
}

func (e *NSError) Error() string {
	return fmt.Sprintf("ane: %s failed: %s error %d: %s", e.Op, e.Domain, e.Code, e.Description)
}

// IO describes one input or output of a program: a [1, C, 1, S] tensor, channel-major, whose
// surface holds Bytes bytes (C * S * element size).
type IO struct {
	Name  string
	Bytes int
}

// Spec is what Compile needs: the MIL text, the weight blob files by the path the MIL names them
// with (e.g. "@model_path/weights/attn_qkv.bin"), and the I/O sizes in the order of the
// program's parameters and results.
type Spec struct {
	MIL     []byte
	Weights map[string][]byte
	Inputs  []IO
	Outputs []IO
}

// Report describes what `anerun doctor` shows about the ANE.
type Report struct {
	OS           string   // e.g. "darwin 25.1.0"
	Chip         string   // e.g. "Apple M4 Pro"
	Framework    bool     // AppleNeuralEngine.framework loaded
	Classes      []string // private classes that resolved
	Missing      []string // private classes that did not
	Available    bool     // everything needed resolved
	Reason       string   // why not, when not Available
	CompileCount int      // compiles used by this process
}

// Classes are the private classes the driver needs.
var Classes = []string{"_ANEInMemoryModelDescriptor", "_ANEInMemoryModel", "_ANERequest", "_ANEIOSurfaceObject"}
