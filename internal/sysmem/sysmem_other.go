//go:build !linux && !darwin

package sysmem

// available is unknown on this system.
func available() (Limit, bool) { return Limit{}, false }
