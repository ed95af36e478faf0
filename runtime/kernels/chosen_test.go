package kernels

import "testing"

// TestKernels checks that every operation names a kernel, and that the names follow the level
// in use: the Go twins everywhere once the assembly is off.
func TestKernels(t *testing.T) {
	for _, level := range isaLevels() {
		restore := level.set()
		for _, k := range Kernels() {
			if k.Op == "" || k.Impl == "" {
				t.Errorf("level %s: empty kernel entry %+v", level.name, k)
			}
			if level.name == "go" && k.Impl != "go" {
				t.Errorf("with the assembly off, %s is %q", k.Op, k.Impl)
			}
		}
		t.Logf("level %s: %v", level.name, Kernels())
		restore()
	}
}
