package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/anepack/anepack/internal/transfer"
)

// hashes are the digests of a completed download.
type hashes struct{ sha256, gitSHA1 string }

// download fetches one file into part through the transfer engine (ranged chunks in
// parallel, resume from part and part.json, retries, stalls) and returns its digests.
func (c *Client) download(ctx context.Context, src *cdnSource, f FileInfo, part string, tr *tracker) (hashes, error) {
	gitBlob := !f.LFS
	newHashes := func() []hash.Hash {
		hs := []hash.Hash{sha256.New()}
		if gitBlob {
			// A git blob's id is the SHA-1 of "blob <size>\0" and the content.
			g := sha1.New()
			io.WriteString(g, "blob "+strconv.FormatInt(f.Size, 10)+"\x00")
			hs = append(hs, g)
		}
		return hs
	}
	t := &transfer.Transfer{
		Source: src, Path: part, StatePath: part + ".json", ID: f.etag(), Size: f.Size,
		Units: transfer.Chunks(f.Size, c.ChunkSize), NewHashes: newHashes,
		Jobs: c.Jobs, Streams: c.streams,
		Retries: c.Backoff.Retries, Delay: c.Backoff.delay, Sleep: c.sleep,
		DiskError: func(err error) error { return diskErr(err, part) },
		Progress:  tr.add,
		Resumed: func(have int64) {
			c.logf("%s: resuming from %s already downloaded", f.Path, formatSize(have))
		},
		Logf: c.logf, Label: f.Path,
	}
	for changed := false; ; changed = true {
		res, err := t.Run(ctx)
		if errors.Is(err, transfer.ErrChanged) && !changed {
			// The file is addressed by its hash and cannot change: a server that honours
			// Range and then sends the whole file is flaky. Start over once.
			c.logf("%s: %v; starting over", f.Path, err)
			tr.add(-res.Have)
			discardPart(part)
			continue
		}
		if err != nil {
			return hashes{}, src.giveUp(err)
		}
		h := hashes{sha256: hex.EncodeToString(res.Sums[0])}
		if gitBlob {
			h.gitSHA1 = hex.EncodeToString(res.Sums[1])
		}
		return h, nil
	}
}

// cdnSource is where a file's bytes come from: the CDN's signed URL, or the Hub itself for a
// small file. A signed URL can expire during a long download; refresh asks the Hub for a new
// one.
type cdnSource struct {
	c       *Client
	what    reqDesc
	size    int64
	mu      sync.Mutex
	u       *url.URL
	refresh func(ctx context.Context) (*url.URL, error)
}

func (s *cdnSource) url() *url.URL {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.u
}

func (s *cdnSource) renew(ctx context.Context) error {
	u, err := s.refresh(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.u = u
	s.mu.Unlock()
	return nil
}

// maxRenewals bounds the fresh URLs asked for in one request for bytes.
const maxRenewals = 2

// Get implements transfer.Source for the Hub's CDN.
func (s *cdnSource) Get(ctx context.Context, off, end int64) (io.ReadCloser, bool, error) {
	for renewals := 0; ; renewals++ {
		u := s.url()
		req := s.c.newRequest(ctx, http.MethodGet, u, s.c.onEndpoint(u))
		if off > 0 || end >= 0 {
			r := "bytes=" + strconv.FormatInt(off, 10) + "-"
			if end >= 0 {
				r += strconv.FormatInt(end-1, 10)
			}
			req.Header.Set("Range", r)
		}
		resp, err := s.c.contentGet(req)
		if err != nil {
			if ctx.Err() == nil && retryableErr(ctx, err) {
				return nil, false, &transfer.Transient{Err: err}
			}
			return nil, false, err
		}
		body, partial, err := s.answer(resp, off, end)
		if !errors.Is(err, errExpired) {
			return body, partial, err
		}
		if renewals >= maxRenewals {
			return nil, false, &Error{Kind: ErrForbidden, Repo: s.what.repo, File: s.what.file,
				Msg: fmt.Sprintf("download of %s in %s: the CDN keeps refusing the signed URL", s.what.file, s.what.repo)}
		}
		s.c.logf("%s: the CDN refused the signed URL; asking the Hub for a new one", s.what.file)
		if err := s.renew(ctx); err != nil {
			return nil, false, err
		}
	}
}

// errExpired: the CDN refused a (probably expired) signed URL.
var errExpired = errors.New("the download URL was refused (expired signature?)")

// answer reads the status of a response to a request for bytes [off, end).
func (s *cdnSource) answer(resp *http.Response, off, end int64) (io.ReadCloser, bool, error) {
	what := s.what
	switch st := resp.StatusCode; {
	case st == http.StatusPartialContent:
		cs, _, total, ok := transfer.ParseContentRange(resp.Header.Get("Content-Range"))
		if !ok || cs != off || (total >= 0 && total != s.size) {
			resp.Body.Close()
			return nil, false, &Error{Kind: ErrProtocol, Repo: what.repo, File: what.file, Status: st,
				Msg: fmt.Sprintf("download of %s: asked for bytes from %d of %d, got Content-Range %q", what.file, off, s.size, resp.Header.Get("Content-Range"))}
		}
		return resp.Body, true, nil
	case st == http.StatusOK:
		if off == 0 && end < 0 && resp.ContentLength >= 0 && resp.ContentLength != s.size {
			resp.Body.Close()
			return nil, false, &Error{Kind: ErrChecksum, Repo: what.repo, File: what.file,
				Msg: fmt.Sprintf("download of %s: the server sends %d bytes, the Hub lists %d", what.file, resp.ContentLength, s.size)}
		}
		// The whole file; for a ranged request the engine reads it in one stream (CloudFront
		// ignores Range with gzip).
		return resp.Body, false, nil
	case st == http.StatusRequestedRangeNotSatisfiable:
		drain(resp)
		return nil, false, transfer.ErrRestart
	case (st == http.StatusForbidden || st == http.StatusUnauthorized) && !s.c.onEndpoint(resp.Request.URL):
		drain(resp)
		return nil, false, errExpired
	case transfer.RetryableStatus(st):
		herr := s.c.httpError(resp, what)
		wait, ok := serverWait(resp.Header, time.Now())
		if ok && wait > s.c.Backoff.MaxWait {
			return nil, false, &Error{Kind: ErrRateLimited, Repo: what.repo, File: what.file, Status: st,
				Msg: fmt.Sprintf("%s asks to wait %v before retrying the download of %s; try again later", resp.Request.URL.Host, wait.Round(time.Second), what.file)}
		}
		return nil, false, &transfer.Transient{Err: herr, Wait: wait}
	default:
		return nil, false, s.c.httpError(resp, what)
	}
}

// giveUp turns the engine's final error into the Error a user reads.
func (s *cdnSource) giveUp(err error) error {
	var gu *transfer.GiveUpError
	if !errors.As(err, &gu) {
		return err
	}
	var he *Error
	if errors.As(gu.Err, &he) {
		return he
	}
	return &Error{Kind: ErrNetwork, Repo: s.what.repo, File: s.what.file,
		Msg: fmt.Sprintf("download of %s in %s failed after %d attempts", s.what.file, s.what.repo, gu.Attempts), Err: gu.Err}
}

// contentGet sends a download request, following redirects of any kind (a
// CDN may redirect again). The token goes only where the client or the Hub
// itself sends it: a redirect keeps it only when the Hub answered it and it
// points at the Hub. Once another host (the CDN) has answered, no later hop
// carries it, even one that leads back to the Hub: a host that is not the
// Hub must never choose where the token goes.
func (c *Client) contentGet(req *http.Request) (*http.Response, error) {
	auth := req.Header.Get("Authorization") != ""
	for hop := 0; ; hop++ {
		resp, err := c.send(req, c.StallTimeout)
		if err != nil {
			return nil, err
		}
		if !isRedirect(resp.StatusCode) {
			return resp, nil
		}
		loc := resp.Header.Get("Location")
		next, perr := req.URL.Parse(loc)
		if loc == "" || perr != nil {
			return resp, nil
		}
		drain(resp)
		if hop >= maxRedirects {
			return nil, &Error{Kind: ErrProtocol, Status: resp.StatusCode,
				Msg: fmt.Sprintf("download from %s: more than %d redirects (a redirect loop)", req.URL.Host, maxRedirects)}
		}
		auth = auth && c.onEndpoint(req.URL) && c.onEndpoint(next)
		nreq := c.newRequest(req.Context(), http.MethodGet, next, auth)
		if r := req.Header.Get("Range"); r != "" {
			nreq.Header.Set("Range", r)
		}
		req = nreq
	}
}
