package format

import (
	"errors"
	"io/fs"
)

// unwrapOpen drops the "open <path>:" an opening error carries, since Open's own message names
// the path already: "format: open m.aneb: not a regular file (a named pipe)".
func unwrapOpen(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "open" {
		return pe.Err
	}
	return err
}
