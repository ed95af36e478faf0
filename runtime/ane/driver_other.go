//go:build !(darwin && arm64)

package ane

import (
	"fmt"
	goruntime "runtime"
)

// Driver is the ANE driver; on this platform it cannot be opened.
type Driver struct{}

// Program is a compiled and loaded ANE program; on this platform none can exist.
type Program struct{}

// Open returns ErrUnavailable: the ANE exists only on Apple Silicon Macs.
func Open() (*Driver, error) {
	return nil, fmt.Errorf("%w: %s", ErrUnavailable, notApple)
}

// notApple is why the ANE is unavailable on this platform.
const notApple = "not an Apple Silicon Mac (darwin/arm64)"

// Probe reports that the ANE is unavailable on this platform.
func Probe() Report {
	return Report{OS: goruntime.GOOS + "/" + goruntime.GOARCH, Reason: notApple}
}

// Compile is unavailable on this platform.
func (d *Driver) Compile(Spec) (*Program, error) { return nil, ErrUnavailable }

// Close does nothing on this platform.
func (d *Driver) Close() error { return nil }

// Eval is unavailable on this platform.
func (p *Program) Eval(in, out [][]byte) error { return ErrUnavailable }

// Close does nothing on this platform.
func (p *Program) Close() error { return nil }
