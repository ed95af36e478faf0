package hub

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/anepack/anepack/internal/regfile"
	"github.com/anepack/anepack/internal/transfer"
)

// UploadProgress shows one upload (a file, or one LFS part): the command-line tools draw it as a bar.
type UploadProgress interface {
	// Set reports done bytes of total.
	Set(done, total int64)
	// Finish ends the display.
	Finish()
}

// UploadOptions configure Client.Upload. The retry policy is the caller's (package remote
// applies the one of its other transfers), since an upload repeats a whole call or part.
type UploadOptions struct {
	// Label names the upload in messages and log lines (e.g. "hf://org/repo/file").
	Label string
	// Private creates a missing repo as private.
	Private bool
	// Message is the commit message; empty means "Upload <file> with anepack".
	Message string
	// SHA256 is the file's sha256 in hex, which names its LFS object.
	SHA256 string
	// Jobs is how many parts of a multipart upload go at once (default 1).
	Jobs int
	// Retries is how many times a failing call or part is repeated; Delay is the wait before
	// retry n (0-based); Sleep waits (default: a timer).
	Retries int
	Delay   func(n int) time.Duration
	Sleep   func(ctx context.Context, d time.Duration) error
	// HTTP sends the requests; redirects are followed, but the token only along the Hub's own
	// (see tokenRedirects). Default: Client.HTTP's transport.
	HTTP *http.Client
	// NewProgress, if set, starts a display for an upload of total bytes.
	NewProgress func(label string, total int64) UploadProgress
	// Logf receives one line per notable event (retries, a repo that exists, an object the
	// Hub has already); nil means silent. The token never appears in it.
	Logf func(format string, args ...any)
}

// Uploaded is what Upload did.
type Uploaded struct {
	// Sent counts the bytes uploaded (0 when the Hub had the object already).
	Sent int64
	// Commit is the commit that added the file.
	Commit string
}

// Upload adds the local file at path to repo at revision (a branch) as file, through the Hub's
// upload API (docs/hub.md, "Uploads"): it creates the repo if it is missing (409: it exists),
// asks where the file must go (preupload: it must be LFS), sends it to LFS storage unless the
// Hub has the object already (basic transfer, or multipart with parts in parallel to their
// presigned URLs, which never see the token), verifies it when the Hub asks, and commits it.
// The token is required; it goes only to the endpoint.
func (c *Client) Upload(ctx context.Context, repo, revision, path, file string, opts UploadOptions) (Uploaded, error) {
	if err := c.init(); err != nil {
		return Uploaded{}, err
	}
	if c.Token == "" {
		return Uploaded{}, &Error{Kind: ErrUnauthorized, Repo: repo,
			Msg: fmt.Sprintf("%s: pushing to the Hub needs a token with write access: set HF_TOKEN (or log in with `hf auth login`)", opts.Label)}
	}
	if revision == "" {
		revision = "main"
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Uploaded{}, err
	}
	u := c.uploader(opts)
	up := upload{repo: repo, revision: revision, path: path, file: file, size: fi.Size(), oid: opts.SHA256}
	if err := u.createRepo(ctx, repo); err != nil {
		return Uploaded{}, err
	}
	mode, err := u.preupload(ctx, up)
	if err != nil {
		return Uploaded{}, err
	}
	if mode != "lfs" {
		return Uploaded{}, fmt.Errorf("%s: the Hub wants %s stored as %q, not in LFS; a bundle must go to LFS", opts.Label, file, mode)
	}
	sent, err := u.lfsUpload(ctx, up)
	if err != nil {
		return Uploaded{}, err
	}
	commit, err := u.commit(ctx, up)
	if err != nil {
		return Uploaded{}, err
	}
	return Uploaded{Sent: sent, Commit: commit}, nil
}

// upload is the file being uploaded.
type upload struct {
	repo, revision string
	path, file     string
	size           int64
	oid            string // sha256 hex
}

// uploader speaks the Hub's upload API for one Upload.
type uploader struct {
	c    *Client
	opts UploadOptions
	hc   *http.Client
}

func (c *Client) uploader(opts UploadOptions) *uploader {
	base := opts.HTTP
	if base == nil {
		base = &http.Client{}
		if c.HTTP != nil {
			base.Transport = c.HTTP.Transport
		}
	}
	u := &uploader{c: c, opts: opts}
	u.hc = u.tokenRedirects(base)
	return u
}

func (u *uploader) logf(format string, args ...any) {
	if u.opts.Logf != nil {
		u.opts.Logf(format, args...)
	}
}

func (u *uploader) progress(label string, total int64) UploadProgress {
	if u.opts.NewProgress == nil {
		return nopProgress{}
	}
	return u.opts.NewProgress(label, total)
}

type nopProgress struct{}

func (nopProgress) Set(int64, int64) {}
func (nopProgress) Finish()          {}

func (u *uploader) wait(ctx context.Context, attempt int) error {
	var d time.Duration
	if u.opts.Delay != nil {
		d = u.opts.Delay(attempt)
	}
	if u.opts.Sleep != nil {
		return u.opts.Sleep(ctx, d)
	}
	return transfer.Sleep(ctx, d)
}

func (u *uploader) delay(attempt int) time.Duration {
	if u.opts.Delay == nil {
		return 0
	}
	return u.opts.Delay(attempt)
}

// tokenRedirects returns a copy of hc whose redirects keep the token only while every request
// of the chain, the new one included, is on the Hub endpoint: once another host has answered,
// it must not choose where the token goes. (Go's own rule would forward it to any subdomain,
// and to the same host on any port: the CDN cdn-lfs.huggingface.co included.)
func (u *uploader) tokenRedirects(hc *http.Client) *http.Client {
	c := *hc
	next := hc.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		keep := u.c.onEndpoint(req.URL)
		for _, v := range via {
			keep = keep && u.c.onEndpoint(v.URL)
		}
		if !keep {
			req.Header.Del("Authorization")
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
	return &c
}

// uploadError is a failed upload call: the Error of its status, whose message carries the
// server's words and what to do about a token.
func uploadError(what string, status int, msg string) *Error {
	kind, hint := ErrProtocol, ""
	switch {
	case status == http.StatusUnauthorized:
		kind, hint = ErrUnauthorized, " (check HF_TOKEN: it must be a valid token with write access)"
	case status == http.StatusForbidden:
		kind, hint = ErrForbidden, " (the token lacks write access to this repo)"
	case status == http.StatusNotFound:
		kind = ErrRepoNotFound
	case status == http.StatusTooManyRequests:
		kind = ErrRateLimited
	case status >= 500:
		kind = ErrServer
	}
	return &Error{Kind: kind, Status: status, Msg: fmt.Sprintf("%s: HTTP %d: %s%s", what, status, msg, hint)}
}

// call sends a JSON (or NDJSON) request to the Hub with the token, retrying transient
// failures, and decodes the answer into out. okCodes are statuses besides 2xx that are not an
// error (their body is not decoded).
func (u *uploader) call(ctx context.Context, what, method, rawURL, ctype string, body []byte, out any, okCodes ...int) (int, error) {
	for attempt := 0; ; attempt++ {
		code, err := u.callOnce(ctx, what, method, rawURL, ctype, body, out, okCodes)
		if err == nil {
			return code, nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		var tr *transfer.Transient
		if attempt >= u.opts.Retries || !errors.As(err, &tr) {
			var he *Error
			if errors.As(err, &he) {
				return code, redact(he, u.c.Token)
			}
			return 0, redact(err, u.c.Token)
		}
		u.logf("%s: %v; retrying in %v", what, redact(tr.Err, u.c.Token), u.delay(attempt))
		if err := u.wait(ctx, attempt); err != nil {
			return 0, err
		}
	}
}

// callOnce is one try of call; a failure worth repeating is *transfer.Transient.
func (u *uploader) callOnce(ctx context.Context, what, method, rawURL, ctype string, body []byte, out any, okCodes []int) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, rawURL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", ctype)
	if strings.Contains(ctype, "git-lfs") {
		req.Header.Set("Accept", ctype)
	}
	if u.c.onEndpoint(req.URL) {
		req.Header.Set("Authorization", "Bearer "+u.c.Token)
	}
	resp, err := u.hc.Do(req)
	if err != nil {
		if retryableErr(ctx, err) {
			return 0, &transfer.Transient{Err: err}
		}
		return 0, err
	}
	data, rerr := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	resp.Body.Close()
	if rerr != nil {
		return 0, &transfer.Transient{Err: rerr}
	}
	ok := resp.StatusCode/100 == 2
	for _, c := range okCodes {
		ok = ok || resp.StatusCode == c
	}
	if !ok {
		e := uploadError(what, resp.StatusCode, uploadMessage(resp.Header, data))
		if transfer.RetryableStatus(resp.StatusCode) {
			return resp.StatusCode, &transfer.Transient{Err: e}
		}
		return resp.StatusCode, e
	}
	if out != nil && len(data) > 0 && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s: invalid JSON answer: %v", what, err)
		}
	}
	return resp.StatusCode, nil
}

// uploadMessage is the server's word on a failed upload call: the Hub's (serverMessage), else
// the start of the body, since storage servers answer in their own formats.
func uploadMessage(h http.Header, body []byte) string {
	if m := serverMessage(h, body); m != "" {
		return m
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func (u *uploader) createRepo(ctx context.Context, repo string) error {
	org, name, _ := strings.Cut(repo, "/")
	body, _ := json.Marshal(map[string]any{"name": name, "organization": org, "private": u.opts.Private})
	code, err := u.call(ctx, "creating "+repo, http.MethodPost, u.c.Endpoint+"/api/repos/create", "application/json", body, nil, http.StatusConflict)
	if err == nil && code == http.StatusConflict {
		u.logf("hf://%s exists; adding to it", repo)
	}
	return err
}

func (u *uploader) repoAPI(up upload, op string) string {
	return u.c.Endpoint + "/api/models/" + up.repo + "/" + op + "/" + url.PathEscape(up.revision)
}

// preupload asks the Hub how the file must be stored ("lfs" or "regular").
func (u *uploader) preupload(ctx context.Context, up upload) (string, error) {
	f, err := regfile.Open(up.path)
	if err != nil {
		return "", err
	}
	sample := make([]byte, 512)
	n, _ := io.ReadFull(f, sample)
	f.Close()
	body, _ := json.Marshal(map[string]any{"files": []map[string]any{{
		"path": up.file, "sample": base64.StdEncoding.EncodeToString(sample[:n]), "size": up.size}}})
	var out struct {
		Files []struct {
			Path         string `json:"path"`
			UploadMode   string `json:"uploadMode"`
			ShouldIgnore bool   `json:"shouldIgnore"`
		} `json:"files"`
	}
	if _, err := u.call(ctx, "preupload of "+up.file, http.MethodPost, u.repoAPI(up, "preupload"), "application/json", body, &out); err != nil {
		return "", err
	}
	for _, f := range out.Files {
		if f.Path == up.file {
			if f.ShouldIgnore {
				return "", fmt.Errorf("%s: the repo's .gitignore excludes %s", u.opts.Label, up.file)
			}
			return f.UploadMode, nil
		}
	}
	return "", fmt.Errorf("preupload of %s: the Hub's answer does not mention the file", up.file)
}

// commit records the LFS file in the repo and returns the commit id.
func (u *uploader) commit(ctx context.Context, up upload) (string, error) {
	msg := u.opts.Message
	if msg == "" {
		msg = "Upload " + up.file + " with anepack"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.Encode(map[string]any{"key": "header", "value": map[string]any{"summary": msg, "description": ""}})
	enc.Encode(map[string]any{"key": "lfsFile", "value": map[string]any{"path": up.file, "algo": "sha256", "oid": up.oid, "size": up.size}})
	var out struct {
		CommitOid string `json:"commitOid"`
		CommitURL string `json:"commitUrl"`
	}
	if _, err := u.call(ctx, "commit of "+up.file, http.MethodPost, u.repoAPI(up, "commit"), "application/x-ndjson", b.Bytes(), &out); err != nil {
		return "", err
	}
	if out.CommitOid == "" {
		return "", fmt.Errorf("commit of %s: the Hub's answer has no commitOid", up.file)
	}
	return out.CommitOid, nil
}
