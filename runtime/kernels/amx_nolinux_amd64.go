//go:build !noasm && !linux

package kernels

// amxPermitted: only Linux is known here to hand out the AMX tile state (on request); on other
// systems MatMulF16AMX runs its Go twin and UseAMX is false.
func amxPermitted() bool { return false }
