// Package regfile opens files that must be regular files (bundles, checkpoint files, blobs)
// without ever blocking on something else. Opening a named pipe for reading blocks until a
// writer appears, which may be never, and a device may stream without end: checking the file
// type after os.Open is too late. Open checks it first, in a way that cannot block.
package regfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Open opens path for reading if it is a regular file (after following symlinks), and fails
// with an error naming the kind of file otherwise ("not a regular file (a named pipe)").
// It never blocks on a named pipe or a device.
func Open(path string) (*os.File, error) {
	f, err := openNoBlock(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: path, Err: NotRegular(fi.Mode())}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile is os.ReadFile through Open.
func ReadFile(path string) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// NotRegular is the error for a file of mode m that is not a regular file.
func NotRegular(m fs.FileMode) error {
	return fmt.Errorf("not a regular file (%s)", kind(m))
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "type " + m.Type().String()
}
