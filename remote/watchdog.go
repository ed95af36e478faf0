package remote

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/anepack/anepack/internal/stall"
)

// A server that accepts a connection and never answers held `anerun pull` forever: the
// requests had no deadline for their response headers, only the download bodies a stall check.
// Every GET and HEAD this package sends (a probe, a registry's manifest, config and token, a
// blob's ranges) now goes through watchdog: from the moment it is sent, each window of
// StallTimeout must bring the response headers or MinRate of the body, as the Hub client's
// requests do. Uploads are left alone: their response comes only after the request body.

// watchdog is an http.RoundTripper holding GET and HEAD requests to a stall policy.
type watchdog struct {
	base   http.RoundTripper
	policy stall.Policy
}

// RoundTrip implements http.RoundTripper.
func (w *watchdog) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return w.base.RoundTrip(req)
	}
	parent := req.Context()
	ctx, cancel := context.WithCancel(parent)
	m := stall.Start(w.policy, cancel)
	resp, err := w.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		m.Stop()
		cancel()
		if m.Fired() && parent.Err() == nil {
			return nil, fmt.Errorf("%w: %s", stall.ErrStalled, m.Reason())
		}
		return nil, err
	}
	m.Restart() // the body gets whole windows of its own
	resp.Body = stall.Body(resp.Body, m, cancel, parent)
	return resp, nil
}

// releaseBody closes a body and then releases what its request held.
type releaseBody struct {
	io.ReadCloser
	release func()
}

func (b releaseBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}
