package main

import (
	"fmt"
	"os"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/internal/acquire"
)

// openBundle opens path for inspect and verify, saying what to do when it is not a bundle: a
// directory (a checkpoint, to pack first) or a GGUF file get their own advice instead of
// format's "bad magic".
func openBundle(path string) (*format.Bundle, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory; this command wants a .aneb bundle (a checkpoint directory is packed into one with: anepack %s)", path, path)
	}
	if err := acquire.CheckNotGGUF(path); err != nil {
		return nil, err
	}
	return format.Open(path)
}
