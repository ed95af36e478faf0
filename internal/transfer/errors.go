package transfer

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

var (
	// ErrShort is a response that ended before the bytes it was asked for.
	ErrShort = errors.New("the server ended the response early")
	// ErrChanged is a file that changed on the server during the download: after answering
	// Range requests with 206, the server sent the whole file (200), which is what If-Range
	// does when the validator no longer matches. The caller starts the transfer over.
	ErrChanged = errors.New("the file changed on the server during the download")
	// ErrRestart, returned by a Source, asks for the file to be fetched again from byte 0 in
	// one stream (the server refused the range: HTTP 416).
	ErrRestart = errors.New("the server refused the range; starting the file over")
)

// Transient marks a failure that may go away by trying again (a Source returns it for 408,
// 429, 5xx and connection errors). Wait, when set, is the delay the server asked for
// (Retry-After); otherwise the caller's backoff decides.
type Transient struct {
	Err  error
	Wait time.Duration
}

func (e *Transient) Error() string { return e.Err.Error() }
func (e *Transient) Unwrap() error { return e.Err }

// GiveUpError is the last transient failure of a unit that failed on every attempt.
type GiveUpError struct {
	Attempts int
	Err      error
}

func (e *GiveUpError) Error() string {
	return fmt.Sprintf("giving up after %d attempts: %v", e.Attempts, e.Err)
}
func (e *GiveUpError) Unwrap() error { return e.Err }

// frameError is a compressed frame that does not decode: corrupt at the source or on the way.
// It is retried as a cut transfer is (a transient corruption heals; a stored one fails after
// the retries).
type frameError struct {
	off int64
	err error
}

func (e *frameError) Error() string {
	return fmt.Sprintf("the compressed frame at byte %d does not decode: %v", e.off, e.err)
}

func (e *frameError) Unwrap() error { return ErrShort }

// RetryableStatus reports whether an HTTP status means "try again": 408, 429 and the 5xx
// statuses servers and proxies use for passing trouble (the set huggingface_hub retries).
func RetryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}
