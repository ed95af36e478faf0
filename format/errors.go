package format

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors returned by this package wrap them, so test with errors.Is;
// errors.As with a *FormatError gives the offending byte offset.
var (
	ErrNotBundle = errors.New("not an .aneb bundle")         // wrong magic
	ErrVersion   = errors.New("unsupported bundle version")  // a newer major version (or major 0)
	ErrTruncated = errors.New("bundle is truncated")         // shorter than its header says
	ErrDigest    = errors.New("bundle digest mismatch")      // root or section digest, or non-zero padding
	ErrClosed    = errors.New("bundle is closed")            // a Bundle method after Close
	ErrAborted   = errors.New("bundle writer was aborted")   // a Writer method after Abort
	ErrCommitted = errors.New("bundle writer was committed") // Begin, Add or End after Commit
)

// FormatError reports a malformed bundle: the byte offset of the offending field and what is
// wrong with it. Err, when set, is one of the sentinel errors and is returned by Unwrap.
type FormatError struct {
	Offset int64  // file offset of the offending bytes
	Msg    string // what was found and what was expected
	Err    error  // ErrNotBundle, ErrVersion, ErrTruncated, ErrDigest or nil
}

// Error returns "offset N: <sentinel>: <message>".
func (e *FormatError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("offset %d: %v: %s", e.Offset, e.Err, e.Msg)
	}
	return fmt.Sprintf("offset %d: %s", e.Offset, e.Msg)
}

// Unwrap returns the sentinel error classifying e, if any.
func (e *FormatError) Unwrap() error { return e.Err }

// formatErr builds a *FormatError without a sentinel.
func formatErr(off int64, format string, args ...any) error {
	return &FormatError{Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// sentinelErr builds a *FormatError classified by sentinel.
func sentinelErr(sentinel error, off int64, format string, args ...any) error {
	return &FormatError{Offset: off, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}
