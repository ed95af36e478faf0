//go:build !amd64 || noasm

package kernels

// isaLevel is one instruction-set level of the matrix kernels; set switches
// to it and returns a func that switches back.
type isaLevel struct {
	name string
	set  func() (restore func())
}

// isaLevels lists the levels this machine can run: here only the build's own.
func isaLevels() []isaLevel {
	return []isaLevel{{"default", func() func() { return func() {} }}}
}
