//go:build !noasm

#include "textflag.h"

// func spinPause()
// PAUSE tells the core that this is a spin-wait loop: it waits ~40 ns on
// recent Intel cores (fewer cycles on AMD), issues nothing meanwhile and
// avoids the pipeline flush on leaving the loop.
TEXT ·spinPause(SB), NOSPLIT, $0-0
	PAUSE
	RET
