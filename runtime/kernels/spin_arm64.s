//go:build !noasm

#include "textflag.h"

// func spinPause()
// YIELD is the Arm spin-wait hint (as the Go runtime's procyield uses).
TEXT ·spinPause(SB), NOSPLIT, $0-0
	YIELD
	RET
