//go:build !unix

package regfile

import (
	"io/fs"
	"os"
)

// openNoBlock stats path before opening it: without O_NONBLOCK there is no way to open a
// named pipe without waiting, so a non-regular file is refused before the open.
func openNoBlock(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: NotRegular(fi.Mode())}
	}
	return os.Open(path)
}
