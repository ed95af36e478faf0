package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// FileInfo describes one file of a repo at a commit.
type FileInfo struct {
	Path   string // path inside the repo, '/'-separated
	Size   int64  // bytes
	BlobID string // git blob SHA-1 (of the LFS pointer, for LFS files)
	LFS    bool   // stored in LFS/Xet: SHA256 is known from the listing
	// SHA256 of the content: from the listing for LFS files; filled in for
	// every file returned by Snapshot.
	SHA256 string
	// LocalPath is set by Snapshot: the file in the snapshot folder.
	LocalPath string
	// Cached is set by Snapshot: the file was already in the cache.
	Cached bool
}

// etag is the cache's blob name for the file: the sha256 for LFS files, the
// git blob id otherwise (what X-Linked-Etag / ETag carry).
func (f FileInfo) etag() string {
	if f.LFS {
		return f.SHA256
	}
	return f.BlobID
}

// RepoInfo is a repo resolved at a revision.
type RepoInfo struct {
	ID       string // "Org/Name" as the server spells it
	Revision string // what was asked for
	Commit   string // the 40-hex commit it resolved to
	Private  bool
	Gated    string     // "", "auto" or "manual"
	Files    []FileInfo // every file at the commit, sorted by path
}

type apiLFS struct {
	SHA256 string `json:"sha256"` // in model info siblings
	OID    string `json:"oid"`    // in tree entries
	Size   int64  `json:"size"`
}

type apiSibling struct {
	RFilename string  `json:"rfilename"`
	Size      *int64  `json:"size"`
	BlobID    string  `json:"blobId"`
	LFS       *apiLFS `json:"lfs"`
}

// apiModelInfo is the model info answer but its siblings (see modelInfoStream).
type apiModelInfo struct {
	ID      string          `json:"id"`
	SHA     string          `json:"sha"`
	Private bool            `json:"private"`
	Gated   json.RawMessage `json:"gated"`
}

type apiTreeEntry struct {
	Type string  `json:"type"`
	Path string  `json:"path"`
	Size int64   `json:"size"`
	OID  string  `json:"oid"`
	LFS  *apiLFS `json:"lfs"`
}

// Resolve asks the Hub which commit revision points to and lists every file
// at that commit, with sizes and hashes. It makes one request
// (/api/models/{repo}/revision/{rev}?blobs=true) when the server returns
// blob metadata, else it also pages through the tree listing.
func (c *Client) Resolve(ctx context.Context, repo, revision string) (*RepoInfo, error) {
	info, err := c.resolve(ctx, repo, revision)
	return info, redact(err, c.Token)
}

func (c *Client) resolve(ctx context.Context, repo, revision string) (*RepoInfo, error) {
	revision, err := c.prepare(repo, revision)
	if err != nil {
		return nil, err
	}
	what := reqDesc{repo: repo, rev: revision, kind: "model info of"}
	mi := &modelInfoStream{what: what}
	u := c.Endpoint + "/api/models/" + repo + "/revision/" + url.PathEscape(revision) + "?blobs=true"
	if err := c.getJSON(ctx, u, what, mi); err != nil {
		return nil, err
	}
	if !isCommitHash(mi.info.SHA) {
		return nil, &Error{Kind: ErrProtocol, Repo: repo, Revision: revision,
			Msg: fmt.Sprintf("%s: the answer has no commit hash (\"sha\" is %q); is HF_ENDPOINT (%s) a Hugging Face Hub?", what, mi.info.SHA, c.Endpoint)}
	}
	info := &RepoInfo{ID: mi.info.ID, Revision: revision, Commit: mi.info.SHA, Private: mi.info.Private}
	if info.ID == "" {
		info.ID = repo
	}
	var g any
	if json.Unmarshal(mi.info.Gated, &g) == nil {
		if s, ok := g.(string); ok {
			info.Gated = s
		}
	}
	files, complete := mi.files, mi.complete
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	if !complete {
		// A mirror that ignores blobs=true: the tree listing has the metadata.
		var err error
		if files, err = c.listTree(ctx, repo, info.Commit); err != nil {
			return nil, err
		}
	}
	if err := checkListing(files); err != nil {
		return nil, &Error{Kind: ErrUnsafePath, Repo: repo, Revision: revision, Msg: fmt.Sprintf("%s at %s", repo, info.Commit), Err: err}
	}
	info.Files = files
	return info, nil
}

// maxListingFiles bounds the files a listing may name. The Hub's own limit is far lower (it
// advises under 100,000 files a repo); beyond this a listing is hostile or broken, and each
// FileInfo kept costs a couple of hundred bytes. (Variables only so tests can lower them.)
var maxListingFiles = 1_000_000

// maxListingBytes bounds one listing answer (a model info, a page of the tree).
var maxListingBytes int64 = 256 << 20

// modelInfoStream decodes a model info answer as a stream: the siblings, which make up almost
// all of it, are converted to FileInfos one at a time, so decoding costs about what the
// FileInfos take instead of several times the answer's size (a 90 MB listing used to cost
// over a gigabyte). complete is false when the server left out sizes or blob ids
// (blobs=true not honoured).
type modelInfoStream struct {
	what     reqDesc
	info     apiModelInfo // without Siblings
	files    []FileInfo
	complete bool
}

// decodeStream implements streamDecoder.
func (m *modelInfoStream) decodeStream(dec *json.Decoder) error {
	m.complete = true
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		switch key {
		case "siblings":
			err = m.decodeSiblings(dec)
		case "id":
			err = dec.Decode(&m.info.ID)
		case "sha":
			err = dec.Decode(&m.info.SHA)
		case "private":
			err = dec.Decode(&m.info.Private)
		case "gated":
			err = dec.Decode(&m.info.Gated)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return err
		}
	}
	return expectDelim(dec, '}')
}

func (m *modelInfoStream) decodeSiblings(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil || tok == nil { // "siblings": null
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("siblings: expected a list, got %v", tok)
	}
	for dec.More() {
		var s apiSibling
		if err := dec.Decode(&s); err != nil {
			return err
		}
		if len(m.files) >= maxListingFiles {
			return &Error{Kind: ErrProtocol, Repo: m.what.repo,
				Msg: fmt.Sprintf("%s: the listing names more than %d files; anepack does not handle repos that large", m.what, maxListingFiles)}
		}
		if s.Size == nil || s.BlobID == "" {
			m.complete = false // keep reading: the answer must still be valid JSON
			continue
		}
		f := FileInfo{Path: s.RFilename, Size: *s.Size, BlobID: strings.ToLower(s.BlobID)}
		if s.LFS != nil {
			f.LFS, f.SHA256 = true, strings.ToLower(s.LFS.SHA256)
			if s.LFS.Size > 0 {
				f.Size = s.LFS.Size
			}
		}
		m.files = append(m.files, f)
	}
	if !m.complete {
		m.files = nil
	}
	return expectDelim(dec, ']')
}

// expectDelim reads the next token, which must be d.
func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if got, ok := tok.(json.Delim); !ok || got != d {
		return fmt.Errorf("expected %q, got %v", d, tok)
	}
	return nil
}

// streamDecoder is a value getJSONLink decodes piece by piece instead of whole.
type streamDecoder interface {
	decodeStream(dec *json.Decoder) error
}

// checkListing refuses unsafe or duplicate names and hashes of the wrong
// shape, before anything touches the disk.
// files must be sorted by path, so that a name given twice is given twice in a row.
func checkListing(files []FileInfo) error {
	for i, f := range files {
		if err := checkRepoPath(f.Path); err != nil {
			return err
		}
		if i > 0 && files[i-1].Path == f.Path {
			return fmt.Errorf("%w: the listing names %q twice", ErrProtocol, f.Path)
		}
		if f.Size < 0 {
			return fmt.Errorf("%w: the listing gives %q a negative size", ErrProtocol, f.Path)
		}
		if e := f.etag(); !(len(e) == 40 || len(e) == 64) || !isLowerHex(e) {
			return fmt.Errorf("%w: the listing gives %q the hash %q; expected 40 (git) or 64 (sha256) hex digits", ErrProtocol, f.Path, e)
		}
	}
	return nil
}

// ListFiles returns every file of repo at revision with its size and hashes
// (what `anepack ls` prints). Offline it answers from the cache.
func (c *Client) ListFiles(ctx context.Context, repo, revision string) ([]FileInfo, error) {
	if err := c.init(); err != nil {
		return nil, err
	}
	if c.Offline {
		_, files, err := c.cachedListing(repo, revision)
		return files, redact(err, c.Token)
	}
	info, err := c.resolve(ctx, repo, revision)
	if err != nil {
		return nil, redact(err, c.Token)
	}
	return info.Files, nil
}

// listTree pages through /api/models/{repo}/tree/{commit}?recursive=true,
// following the Link rel="next" header.
func (c *Client) listTree(ctx context.Context, repo, commit string) ([]FileInfo, error) {
	what := reqDesc{repo: repo, rev: commit, kind: "file list of"}
	next := c.Endpoint + "/api/models/" + repo + "/tree/" + url.PathEscape(commit) + "?recursive=true&expand=false"
	var files []FileInfo
	for pages := 0; next != ""; pages++ {
		if pages > 10000 {
			return nil, &Error{Kind: ErrProtocol, Repo: repo, Msg: fmt.Sprintf("%s: more than 10000 pages (a pagination loop?)", what)}
		}
		var entries []apiTreeEntry
		link, err := c.getJSONLink(ctx, next, what, &entries)
		if err != nil {
			return nil, err
		}
		if len(files)+len(entries) > maxListingFiles {
			return nil, &Error{Kind: ErrProtocol, Repo: repo,
				Msg: fmt.Sprintf("%s: the listing names more than %d files; anepack does not handle repos that large", what, maxListingFiles)}
		}
		for _, e := range entries {
			if e.Type != "file" {
				continue
			}
			f := FileInfo{Path: e.Path, Size: e.Size, BlobID: strings.ToLower(e.OID)}
			if e.LFS != nil {
				f.LFS, f.SHA256 = true, strings.ToLower(e.LFS.OID)
				if e.LFS.Size > 0 {
					f.Size = e.LFS.Size
				}
			}
			files = append(files, f)
		}
		next = link
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// Ref is a branch or tag and the commit it points to.
type Ref struct {
	Name   string // "main", "v1.0"
	Ref    string // "refs/heads/main"
	Commit string
	Tag    bool
}

// ListRefs returns the repo's branches and tags (GET /api/models/{repo}/refs).
func (c *Client) ListRefs(ctx context.Context, repo string) ([]Ref, error) {
	if err := c.init(); err != nil {
		return nil, err
	}
	if err := checkRepoID(repo); err != nil {
		return nil, err
	}
	var v struct {
		Branches []struct {
			Name, Ref    string
			TargetCommit string `json:"targetCommit"`
		} `json:"branches"`
		Tags []struct {
			Name, Ref    string
			TargetCommit string `json:"targetCommit"`
		} `json:"tags"`
	}
	if err := c.getJSON(ctx, c.Endpoint+"/api/models/"+repo+"/refs", reqDesc{repo: repo, kind: "refs of"}, &v); err != nil {
		return nil, redact(err, c.Token)
	}
	var refs []Ref
	for _, b := range v.Branches {
		refs = append(refs, Ref{Name: b.Name, Ref: b.Ref, Commit: b.TargetCommit})
	}
	for _, t := range v.Tags {
		refs = append(refs, Ref{Name: t.Name, Ref: t.Ref, Commit: t.TargetCommit, Tag: true})
	}
	return refs, nil
}

func (c *Client) getJSON(ctx context.Context, u string, what reqDesc, v any) error {
	_, err := c.getJSONLink(ctx, u, what, v)
	return err
}

// getJSONLink GETs u from the Hub, decodes the JSON answer into v and
// returns the Link rel="next" URL, if any.
func (c *Client) getJSONLink(ctx context.Context, u string, what reqDesc, v any) (string, error) {
	resp, final, err := c.hubDo(ctx, http.MethodGet, u, what)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		if isRedirect(resp.StatusCode) {
			resp.Body.Close()
			return "", &Error{Kind: ErrProtocol, Repo: what.repo, Status: resp.StatusCode,
				Msg: fmt.Sprintf("%s: unexpected redirect to another host", what)}
		}
		return "", c.httpError(resp, what)
	}
	defer resp.Body.Close()
	body := &cappedReader{r: resp.Body, left: maxListingBytes}
	dec := json.NewDecoder(body)
	if sd, ok := v.(streamDecoder); ok {
		err = sd.decodeStream(dec)
	} else {
		err = dec.Decode(v)
	}
	var he *Error
	switch {
	case errors.As(err, &he):
		return "", err
	case body.over:
		return "", &Error{Kind: ErrProtocol, Repo: what.repo,
			Msg: fmt.Sprintf("%s: the answer is larger than %d bytes", what, maxListingBytes)}
	case err != nil && body.err != nil:
		return "", &Error{Kind: ErrNetwork, Repo: what.repo, Msg: fmt.Sprintf("reading %s", what), Err: body.err}
	case err != nil:
		return "", &Error{Kind: ErrProtocol, Repo: what.repo,
			Msg: fmt.Sprintf("%s: the answer is not the expected JSON", what), Err: err}
	}
	next := nextLink(resp.Header.Values("Link"))
	if next == "" {
		return "", nil
	}
	nu, err := final.Parse(next)
	if err != nil {
		return "", &Error{Kind: ErrProtocol, Repo: what.repo, Msg: fmt.Sprintf("%s: bad Link header %q", what, next)}
	}
	if !c.onEndpoint(nu) {
		return "", &Error{Kind: ErrProtocol, Repo: what.repo,
			Msg: fmt.Sprintf("%s: the next page is on another host (%s)", what, nu.Host)}
	}
	return nu.String(), nil
}

// nextLink finds the rel="next" target in Link headers such as
// `<https://huggingface.co/api/...&cursor=abc>; rel="next"`.
func nextLink(values []string) string {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			segs := strings.Split(part, ";")
			target := strings.TrimSpace(segs[0])
			if !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
				continue
			}
			for _, p := range segs[1:] {
				k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(k, "rel") && strings.Trim(val, `"`) == "next" {
					return target[1 : len(target)-1]
				}
			}
		}
	}
	return ""
}

// cappedReader reads at most left bytes and records why reading stopped: over (the cap was
// reached) or err (the connection failed), so that each is reported as what it is.
type cappedReader struct {
	r    io.Reader
	left int64
	over bool
	err  error
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.over = true
		return 0, io.ErrUnexpectedEOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}
