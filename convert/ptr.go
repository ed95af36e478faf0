package convert

import "unsafe"

// uintptrDiff returns the offset of sub inside base (sub must be a sub-slice of base).
func uintptrDiff(sub, base []byte) uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(sub))) - uintptr(unsafe.Pointer(unsafe.SliceData(base)))
}
