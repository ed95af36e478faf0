package remote

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"

	"github.com/anepack/anepack/internal/stall"
	"github.com/anepack/anepack/internal/transfer"
	"github.com/anepack/anepack/store"
)

// source fetches byte ranges of one remote blob over HTTP; it is the transfer.Source of OCI
// and https:// pulls.
type source struct {
	url   string
	label string // names the blob in messages (never a secret)
	// do sends a request: the registry's auth client for OCI, a plain client for https://.
	do func(*http.Request) (*http.Response, error)
	// scope, if set, adds to a request's context what do needs (the OCI auth scope).
	scope func(context.Context) context.Context
	// validator is an ETag or Last-Modified sent as If-Range, so that a changed file is
	// sent whole (200) instead of a mismatched range.
	validator string
}

// statusError is an unexpected HTTP status.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }

// Get implements transfer.Source: bytes [off, end) of the blob (end < 0: to the end), the body
// watched for stalls.
func (s *source) Get(ctx context.Context, off, end int64) (io.ReadCloser, bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	body, partial, err := s.get(ctx, off, end)
	if err != nil {
		cancel()
		if retryable(err) {
			return nil, false, &transfer.Transient{Err: err}
		}
		return nil, false, err
	}
	// The client's watchdog watches the headers and the body for stalls.
	return releaseBody{body, cancel}, partial, nil
}

// get sends the request and reads the status: partial reports 206, otherwise (200) the body
// is the whole blob.
func (s *source) get(ctx context.Context, off, end int64) (body io.ReadCloser, partial bool, err error) {
	if s.scope != nil {
		ctx = s.scope(ctx)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, false, err
	}
	if off > 0 || end >= 0 {
		r := "bytes=" + strconv.FormatInt(off, 10) + "-"
		if end >= 0 {
			r += strconv.FormatInt(end-1, 10)
		}
		req.Header.Set("Range", r)
		if s.validator != "" {
			req.Header.Set("If-Range", s.validator)
		}
	}
	resp, err := s.do(req)
	if err != nil {
		return nil, false, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return resp.Body, false, nil
	case http.StatusPartialContent:
		got, _, _, ok := transfer.ParseContentRange(resp.Header.Get("Content-Range"))
		if !ok || got != off {
			resp.Body.Close()
			return nil, false, fmt.Errorf("%s: asked for bytes from %d, the server sent Content-Range %q", s.label, off, resp.Header.Get("Content-Range"))
		}
		return resp.Body, true, nil
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	text := strings.TrimSpace(string(msg))
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	return nil, false, &statusError{code: resp.StatusCode, msg: fmt.Sprintf("%s: HTTP %s: %s", s.label, resp.Status, text)}
}

// retryable reports whether a failed request is worth repeating: connection errors, cut
// bodies, stalls and the statuses servers use for "try again".
func retryable(err error) bool {
	if store.IsDiskFull(err) {
		return false
	}
	var se *statusError
	if errors.As(err, &se) {
		return transfer.RetryableStatus(se.code)
	}
	var cve *tls.CertificateVerificationError
	var uae x509.UnknownAuthorityError
	var hne x509.HostnameError
	if errors.As(err, &cve) || errors.As(err, &uae) || errors.As(err, &hne) {
		return false // a certificate problem does not go away by waiting
	}
	if errors.Is(err, stall.ErrStalled) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, transfer.ErrShort) {
		return true
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) {
		return true
	}
	// Whatever else went wrong in the HTTP transport (connection broken, TLS record
	// errors, timeouts) is worth another try.
	var ue *url.Error
	var oe *net.OpError
	return errors.As(err, &ue) || errors.As(err, &oe)
}
