package remote

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/anepack/anepack/internal/transfer"
	"github.com/anepack/anepack/store"
)

// pullHTTPS downloads a bundle from a plain URL: ranged chunks in parallel when the server
// honours Range, one stream otherwise. With Options.Digest the bundle must hash to it (and a
// bundle already in the store is not downloaded again); without, its own digests (root,
// every section, zero padding) are checked before it is installed.
func (o *Options) pullHTTPS(ctx context.Context, r Ref) (*Pulled, error) {
	want := o.Digest
	if want != "" {
		if _, err := store.ParseDigest(want); err != nil {
			return nil, fmt.Errorf("--digest: %w", err)
		}
		if o.Store.Has(want) {
			return o.cached(ctx, r, want, "https")
		}
	}
	hc := o.httpClient()
	src := &source{url: r.URL, label: r.URL, do: hc.Do}
	size, sizeFrom, validator, err := probeHTTPS(ctx, hc, r.URL)
	if err != nil {
		return nil, err
	}
	src.validator = validator
	return o.fetch(ctx, fetchSpec{
		ref:      r,
		src:      src,
		size:     size,
		sizeFrom: sizeFrom,
		id:       fmt.Sprintf("https %s %d %s", r.URL, size, validator),
		want:     want,
		transfer: "https",
	})
}

// probeHTTPS learns a file's size and validator with HEAD, or with a one-byte ranged GET
// where HEAD is not allowed; from names the header the size came from.
func probeHTTPS(ctx context.Context, hc *http.Client, url string) (size int64, from, validator string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, url, nil)
	if err != nil {
		return 0, "", "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", "", fmt.Errorf("%s: %w", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK && resp.ContentLength >= 0 {
		return resp.ContentLength, "the HTTP Content-Length", validatorOf(resp.Header), nil
	}
	if resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusOK {
		return 0, "", "", &statusError{code: resp.StatusCode, msg: fmt.Sprintf("%s: HTTP %s", url, resp.Status)}
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set("Range", "bytes=0-0")
	resp, err = hc.Do(req)
	if err != nil {
		return 0, "", "", fmt.Errorf("%s: %w", url, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1))
	switch resp.StatusCode {
	case http.StatusPartialContent:
		if _, _, total, ok := transfer.ParseContentRange(resp.Header.Get("Content-Range")); ok && total >= 0 {
			return total, "the HTTP Content-Range", validatorOf(resp.Header), nil
		}
	case http.StatusOK:
		if resp.ContentLength >= 0 {
			return resp.ContentLength, "the HTTP Content-Length", validatorOf(resp.Header), nil
		}
	default:
		return 0, "", "", &statusError{code: resp.StatusCode, msg: fmt.Sprintf("%s: HTTP %s", url, resp.Status)}
	}
	return 0, "", "", fmt.Errorf("%s: the server does not say how large the file is (no Content-Length, no Content-Range)", url)
}

// validatorOf picks what If-Range can carry: a strong ETag, else Last-Modified.
func validatorOf(h http.Header) string {
	if et := h.Get("ETag"); et != "" && !strings.HasPrefix(et, "W/") {
		return et
	}
	return h.Get("Last-Modified")
}
