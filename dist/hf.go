package dist

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
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/anepack/anepack/hub"
	"github.com/anepack/anepack/internal/regfile"
	"github.com/anepack/anepack/store"
)

// hubClient is Options.Hub, or a client from the environment whose progress goes to
// Options.NewProgress.
func (o *Options) hubClient() (*hub.Client, error) {
	if o.Hub != nil {
		return o.Hub, nil
	}
	env, err := hub.LoadEnv(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	c := env.Client()
	c.Log = o.Log
	if o.NewProgress != nil {
		c.Progress = &hubProgress{o: o}
	}
	c.Jobs = o.jobs()
	o.Hub = c
	return c, nil
}

// hubProgress shows a hub download on an Options progress display.
type hubProgress struct {
	o     *Options
	p     Progress
	total int64
	done  atomic.Int64
}

func (h *hubProgress) Start(files int, bytes int64) {
	h.total = bytes
	h.p = h.o.progress("downloading", bytes)
}
func (h *hubProgress) Add(n int64) {
	if h.p != nil {
		h.p.Set(h.done.Add(n), h.total)
	}
}
func (h *hubProgress) FileDone(string, int64) {}
func (h *hubProgress) Finish() {
	if h.p != nil {
		h.p.Finish()
	}
}

// pullHF downloads the file with the hub client (Hugging Face cache, resume, parallel
// chunks, sha256 verification) and brings it into the store as a hard link (a copy across
// file systems), hashed once more on the way in.
func (o *Options) pullHF(ctx context.Context, r Ref) (*Pulled, error) {
	c, err := o.hubClient()
	if err != nil {
		return nil, err
	}
	file := r.Path
	if file == "" {
		files, err := c.ListFiles(ctx, r.Repo, r.Revision)
		if err != nil {
			return nil, err
		}
		var found []hub.FileInfo
		for _, f := range files {
			if strings.HasSuffix(f.Path, ".aneb") {
				found = append(found, f)
			}
		}
		switch len(found) {
		case 0:
			return nil, fmt.Errorf("%s: no .aneb file in %s at %s; name one: hf://%s/file.aneb", r, r.Repo, r.Revision, r.Repo)
		case 1:
			file = found[0].Path
		default:
			var names []string
			for _, f := range found {
				names = append(names, f.Path)
			}
			return nil, fmt.Errorf("%s: %d bundles in %s (%s); name one: hf://%s/file.aneb", r, len(found), r.Repo, strings.Join(names, ", "), r.Repo)
		}
	}
	fi, err := c.DownloadFile(ctx, r.Repo, r.Revision, file)
	if err != nil {
		return nil, err
	}
	digest := "sha256:" + fi.SHA256
	if _, err := store.ParseDigest(digest); err != nil {
		return nil, fmt.Errorf("%s: the hub client reported no sha256 for %s", r, file)
	}
	if o.Store.Has(digest) {
		return o.cached(ctx, r, digest, "hf")
	}
	e, err := checkBundle(fi.LocalPath, false)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", r, file, err)
	}
	e.Reference, e.Digest, e.Transfer = r.String(), digest, "hf"
	p, err := o.Store.InstallFrom(ctx, fi.LocalPath, e)
	if err != nil {
		return nil, err
	}
	var fetched int64
	if !fi.Cached {
		fetched = fi.Size
	}
	return &Pulled{Entry: e, Path: p, Fetched: fetched}, nil
}

// hfUploader speaks the Hub's upload API (hub-facts.md §3): create the repo, preupload,
// LFS batch with basic or multipart transfers, commit.
type hfUploader struct {
	o        *Options
	endpoint string
	token    string
	hc       *http.Client
}

// hfError is a failed Hub call, with the server's message; the token never appears in it.
type hfError struct {
	what   string
	status int
	msg    string
}

func (e *hfError) Error() string {
	hint := ""
	switch e.status {
	case http.StatusUnauthorized:
		hint = " (check HF_TOKEN: it must be a valid token with write access)"
	case http.StatusForbidden:
		hint = " (the token lacks write access to this repo)"
	}
	return fmt.Sprintf("%s: HTTP %d: %s%s", e.what, e.status, e.msg, hint)
}

func (u *hfUploader) redact(err error) error {
	if err == nil || u.token == "" || !strings.Contains(err.Error(), u.token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), u.token, "hf_***"))
}

// call sends a JSON (or NDJSON) request to the Hub with the token and decodes the answer.
func (u *hfUploader) call(ctx context.Context, what, method, rawURL, ctype string, body []byte, out any, okCodes ...int) (int, error) {
	var last error
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, rawURL, bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", ctype)
		if strings.Contains(ctype, "git-lfs") {
			req.Header.Set("Accept", ctype)
		}
		if u.token != "" && u.onEndpoint(req.URL) {
			req.Header.Set("Authorization", "Bearer "+u.token)
		}
		resp, err := u.hc.Do(req)
		if err == nil {
			data, rerr := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
			resp.Body.Close()
			ok := resp.StatusCode/100 == 2
			for _, c := range okCodes {
				ok = ok || resp.StatusCode == c
			}
			switch {
			case ok && rerr == nil:
				if out != nil && len(data) > 0 && resp.StatusCode/100 == 2 {
					if err := json.Unmarshal(data, out); err != nil {
						return resp.StatusCode, fmt.Errorf("%s: invalid JSON answer: %v", what, err)
					}
				}
				return resp.StatusCode, nil
			case rerr != nil:
				err = rerr
			default:
				err = &hfError{what: what, status: resp.StatusCode, msg: hubMessage(resp.Header, data)}
				var he *hfError
				if errors.As(err, &he) && !retryable(&statusError{code: he.status}) {
					return resp.StatusCode, err
				}
			}
		}
		last = err
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if attempt >= u.o.retries() || (!retryable(err) && !isHFRetry(err)) {
			return 0, u.redact(last)
		}
		d := u.o.delay(attempt)
		u.o.logf("%s: %v; retrying in %v", what, u.redact(err), d)
		if err := u.o.wait(ctx, d); err != nil {
			return 0, err
		}
	}
}

func isHFRetry(err error) bool {
	var he *hfError
	return errors.As(err, &he) && retryable(&statusError{code: he.status})
}

// hubMessage is the Hub's error text: X-Error-Message, else the JSON "error", else the body.
func hubMessage(h http.Header, body []byte) string {
	if m := h.Get("X-Error-Message"); m != "" {
		return m
	}
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil && (e.Error != "" || e.Message != "") {
		return e.Error + e.Message
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// onEndpoint reports whether target is on the Hub endpoint, the only place the token goes.
func (u *hfUploader) onEndpoint(target *url.URL) bool {
	ep, err := url.Parse(u.endpoint)
	return err == nil && hub.SameOrigin(ep, target)
}

// tokenRedirects returns a copy of hc whose redirects keep the token only while every request
// of the chain, the new one included, is on the Hub endpoint: once another host has answered,
// it must not choose where the token goes. (Go's own rule would forward it to any subdomain,
// and to the same host on any port: the CDN cdn-lfs.huggingface.co included.)
func (u *hfUploader) tokenRedirects(hc *http.Client) *http.Client {
	c := *hc
	next := hc.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		keep := u.onEndpoint(req.URL)
		for _, v := range via {
			keep = keep && u.onEndpoint(v.URL)
		}
		if !keep {
			req.Header.Del("Authorization")
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

// pushHF uploads the bundle to a Hub repo (created if missing) through LFS and commits it.
func (o *Options) pushHF(ctx context.Context, path string, r Ref) (*Pushed, error) {
	c, err := o.hubClient()
	if err != nil {
		return nil, err
	}
	if c.Token == "" {
		return nil, fmt.Errorf("%s: pushing to the Hub needs a token with write access: set HF_TOKEN (or log in with `hf auth login`)", r)
	}
	endpoint := strings.TrimRight(c.Endpoint, "/")
	if endpoint == "" {
		endpoint = hub.DefaultEndpoint
	}
	lb, err := o.openBundle(ctx, path)
	if err != nil {
		return nil, err
	}
	file := r.Path
	if file == "" {
		file = filepath.Base(path)
	}
	up := &hfUploader{o: o, endpoint: endpoint, token: c.Token}
	up.hc = up.tokenRedirects(o.httpClient())
	if err := up.createRepo(ctx, r.Repo); err != nil {
		return nil, err
	}
	mode, err := up.preupload(ctx, r, file, lb)
	if err != nil {
		return nil, err
	}
	if mode != "lfs" {
		return nil, fmt.Errorf("%s: the Hub wants %s stored as %q, not in LFS; a bundle must go to LFS", r, file, mode)
	}
	oid := strings.TrimPrefix(lb.digest, "sha256:")
	sent, err := up.lfsUpload(ctx, r, file, oid, lb)
	if err != nil {
		return nil, err
	}
	commit, err := up.commit(ctx, r, file, oid, lb.size)
	if err != nil {
		return nil, err
	}
	out := &Pushed{Ref: r, BundleDigest: lb.digest, Size: lb.size, Uploaded: sent, Commit: commit}
	out.Ref.Path = file
	return out, nil
}

func (u *hfUploader) createRepo(ctx context.Context, repo string) error {
	org, name, _ := strings.Cut(repo, "/")
	body, _ := json.Marshal(map[string]any{"name": name, "organization": org, "private": u.o.Private})
	code, err := u.call(ctx, "creating "+repo, http.MethodPost, u.endpoint+"/api/repos/create", "application/json", body, nil, http.StatusConflict)
	if err == nil && code == http.StatusConflict {
		u.o.logf("hf://%s exists; adding to it", repo)
	}
	return err
}

func (u *hfUploader) repoAPI(r Ref, op string) string {
	return u.endpoint + "/api/models/" + r.Repo + "/" + op + "/" + url.PathEscape(r.Revision)
}

// preupload asks the Hub how the file must be stored ("lfs" or "regular").
func (u *hfUploader) preupload(ctx context.Context, r Ref, file string, lb *localBundle) (string, error) {
	f, err := regfile.Open(lb.path)
	if err != nil {
		return "", err
	}
	sample := make([]byte, 512)
	n, _ := io.ReadFull(f, sample)
	f.Close()
	body, _ := json.Marshal(map[string]any{"files": []map[string]any{{
		"path": file, "sample": base64.StdEncoding.EncodeToString(sample[:n]), "size": lb.size}}})
	var out struct {
		Files []struct {
			Path         string `json:"path"`
			UploadMode   string `json:"uploadMode"`
			ShouldIgnore bool   `json:"shouldIgnore"`
		} `json:"files"`
	}
	if _, err := u.call(ctx, "preupload of "+file, http.MethodPost, u.repoAPI(r, "preupload"), "application/json", body, &out); err != nil {
		return "", err
	}
	for _, f := range out.Files {
		if f.Path == file {
			if f.ShouldIgnore {
				return "", fmt.Errorf("%s: the repo's .gitignore excludes %s", r, file)
			}
			return f.UploadMode, nil
		}
	}
	return "", fmt.Errorf("preupload of %s: the Hub's answer does not mention the file", file)
}

const lfsType = "application/vnd.git-lfs+json"

type lfsAction struct {
	Href   string            `json:"href"`
	Header map[string]string `json:"header"`
}

// lfsUpload sends the file to LFS storage unless it is there already, and returns the bytes
// sent.
func (u *hfUploader) lfsUpload(ctx context.Context, r Ref, file, oid string, lb *localBundle) (int64, error) {
	body, _ := json.Marshal(map[string]any{
		"operation": "upload", "transfers": []string{"basic", "multipart"}, "hash_algo": "sha256",
		"objects": []map[string]any{{"oid": oid, "size": lb.size}},
		"ref":     map[string]string{"name": "refs/heads/" + r.Revision},
	})
	var batch struct {
		Objects []struct {
			OID     string               `json:"oid"`
			Actions map[string]lfsAction `json:"actions"`
			Error   *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"objects"`
	}
	if _, err := u.call(ctx, "LFS batch for "+file, http.MethodPost, u.endpoint+"/"+r.Repo+".git/info/lfs/objects/batch", lfsType, body, &batch); err != nil {
		return 0, err
	}
	if len(batch.Objects) != 1 || batch.Objects[0].OID != oid {
		return 0, fmt.Errorf("LFS batch for %s: the answer does not describe object %s", file, oid)
	}
	obj := batch.Objects[0]
	if obj.Error != nil {
		return 0, fmt.Errorf("LFS batch for %s: %d %s", file, obj.Error.Code, obj.Error.Message)
	}
	upload, ok := obj.Actions["upload"]
	if !ok {
		u.o.logf("%s: %s is already on the Hub; not uploading it", r, file)
		return 0, nil
	}
	var err error
	if cs, ok := upload.Header["chunk_size"]; ok {
		err = u.multipart(ctx, file, lb, upload, cs, oid)
	} else {
		err = u.putFile(ctx, upload.Href, upload.Header, lb.path, 0, lb.size, "uploading "+file)
	}
	if err != nil {
		return 0, err
	}
	if verify, ok := obj.Actions["verify"]; ok {
		vb, _ := json.Marshal(map[string]any{"oid": oid, "size": lb.size})
		if _, err := u.call(ctx, "LFS verify of "+file, http.MethodPost, verify.Href, lfsType, vb, nil); err != nil {
			return 0, err
		}
	}
	return lb.size, nil
}

// putFile PUTs bytes [off, off+n) of path to a (presigned) URL and returns the ETag,
// retrying transient failures from the start of the slice.
func (u *hfUploader) putFileETag(ctx context.Context, href string, header map[string]string, path string, off, n int64, prog func(int64)) (string, error) {
	for attempt := 0; ; attempt++ {
		f, err := regfile.Open(path)
		if err != nil {
			return "", err
		}
		var sent int64
		body := io.NopCloser(&progressReader{r: io.NewSectionReader(f, off, n), add: func(k int64) { sent += k; prog(k) }})
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, href, body)
		if err != nil {
			f.Close()
			return "", err
		}
		req.ContentLength = n
		for k, v := range header {
			if k != "chunk_size" && !isPartKey(k) {
				req.Header.Set(k, v)
			}
		}
		if u.token != "" && u.onEndpoint(req.URL) {
			req.Header.Set("Authorization", "Bearer "+u.token)
		}
		resp, err := u.hc.Do(req)
		f.Close()
		if err == nil {
			data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return resp.Header.Get("ETag"), nil
			}
			err = &statusError{code: resp.StatusCode, msg: fmt.Sprintf("upload: HTTP %s: %s", resp.Status, hubMessage(resp.Header, data))}
		}
		prog(-sent)
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if attempt >= u.o.retries() || !retryable(err) {
			return "", u.redact(err)
		}
		d := u.o.delay(attempt)
		u.o.logf("upload of bytes %d-%d: %v; retrying in %v", off, off+n, u.redact(err), d)
		if err := u.o.wait(ctx, d); err != nil {
			return "", err
		}
	}
}

func (u *hfUploader) putFile(ctx context.Context, href string, header map[string]string, path string, off, n int64, label string) error {
	prog := u.o.progress(label, n)
	defer prog.Finish()
	var done int64
	_, err := u.putFileETag(ctx, href, header, path, off, n, func(k int64) { done += k; prog.Set(done, n) })
	return err
}

func isPartKey(k string) bool {
	_, err := strconv.Atoi(k)
	return err == nil
}

// multipart uploads the parts in parallel (the URLs are presigned, so order does not
// matter) and completes the upload with their ETags.
func (u *hfUploader) multipart(ctx context.Context, file string, lb *localBundle, upload lfsAction, chunkSize, oid string) error {
	cs, err := strconv.ParseInt(chunkSize, 10, 64)
	if err != nil || cs <= 0 {
		return fmt.Errorf("LFS batch for %s: invalid chunk_size %q", file, chunkSize)
	}
	var nums []int
	for k := range upload.Header {
		if n, err := strconv.Atoi(k); err == nil {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	want := int((lb.size + cs - 1) / cs)
	if len(nums) != want || (want > 0 && (nums[0] != 1 || nums[len(nums)-1] != want)) {
		return fmt.Errorf("LFS batch for %s: %d part URLs for %d parts of %d bytes", file, len(nums), want, cs)
	}
	prog := u.o.progress("uploading "+file, lb.size)
	defer prog.Finish()
	var done atomic.Int64
	etags := make([]string, want)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int, want)
	for i := range want {
		next <- i
	}
	close(next)
	for range min(u.o.jobs(), want) {
		wg.Go(func() {
			for i := range next {
				off := int64(i) * cs
				n := min(cs, lb.size-off)
				et, err := u.putFileETag(ctx, upload.Header[strconv.Itoa(i+1)], nil, lb.path, off, n, func(k int64) { prog.Set(done.Add(k), lb.size) })
				if err == nil && et == "" {
					err = fmt.Errorf("upload of part %d of %s: no ETag in the answer", i+1, file)
				}
				if err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
				etags[i] = et
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	type part struct {
		PartNumber int    `json:"partNumber"`
		ETag       string `json:"etag"`
	}
	parts := make([]part, want)
	for i, et := range etags {
		parts[i] = part{PartNumber: i + 1, ETag: et}
	}
	body, _ := json.Marshal(map[string]any{"oid": oid, "parts": parts})
	_, err = u.call(ctx, "completing the upload of "+file, http.MethodPost, upload.Href, lfsType, body, nil)
	return err
}

type progressReader struct {
	r   io.Reader
	add func(int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.add(int64(n))
	}
	return n, err
}

// commit records the LFS file in the repo and returns the commit id.
func (u *hfUploader) commit(ctx context.Context, r Ref, file, oid string, size int64) (string, error) {
	msg := u.o.Message
	if msg == "" {
		msg = "Upload " + file + " with anepack"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.Encode(map[string]any{"key": "header", "value": map[string]any{"summary": msg, "description": ""}})
	enc.Encode(map[string]any{"key": "lfsFile", "value": map[string]any{"path": file, "algo": "sha256", "oid": oid, "size": size}})
	var out struct {
		CommitOid string `json:"commitOid"`
		CommitURL string `json:"commitUrl"`
	}
	if _, err := u.call(ctx, "commit of "+file, http.MethodPost, u.repoAPI(r, "commit"), "application/x-ndjson", b.Bytes(), &out); err != nil {
		return "", err
	}
	if out.CommitOid == "" {
		return "", fmt.Errorf("commit of %s: the Hub's answer has no commitOid", file)
	}
	return out.CommitOid, nil
}
