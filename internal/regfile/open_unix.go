//go:build unix

package regfile

import (
	"os"
	"syscall"
)

// openNoBlock opens path with O_NONBLOCK, which makes opening a named pipe (or a device that
// would wait) return at once; the caller then checks the type. For the regular files it keeps,
// the flag is cleared again (it means nothing for them, but the file is handed on to code that
// expects ordinary blocking reads).
func openNoBlock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		if rc, err := f.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { syscall.SetNonblock(int(fd), false) })
		}
	}
	return f, nil
}
