//go:build !(darwin && arm64)

package ane

import (
	"fmt"
	goruntime "runtime"
)

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
