package hubtest

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// recorder captures the status and body size of a response.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

// ReadFrom keeps net/http's sendfile path for files served from disk.
func (r *recorder) ReadFrom(src io.Reader) (int64, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.(io.ReaderFrom).ReadFrom(src)
	r.bytes += n
	return n, err
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// record logs every request, also those aborted by a Drop fault.
func (s *Server) record(server string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w}
		get := r.Method == http.MethodGet
		s.mu.Lock()
		if get {
			s.inFlight++
			s.maxIn = max(s.maxIn, s.inFlight)
		}
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			if get {
				s.inFlight--
			}
			s.requests = append(s.requests, Request{Server: server, Method: r.Method, Path: r.URL.EscapedPath(),
				Query: r.URL.RawQuery, Range: r.Header.Get("Range"), Authorization: r.Header.Get("Authorization") != "",
				Status: rec.status, Bytes: rec.bytes})
			s.mu.Unlock()
		}()
		h.ServeHTTP(rec, r)
	})
}

// take reports whether a fault with times applies once more, counting it.
// The caller holds s.mu.
func (s *Server) take(key any, times int) bool {
	if times > 0 && s.fired[key] >= times {
		return false
	}
	s.fired[key]++
	return true
}

func fileMatch(want, file string) bool { return want == "" || want == file }

// statusFault applies the first matching StatusFault, if any.
func (s *Server) statusFault(w http.ResponseWriter, r *http.Request, ep Endpoint, file string) bool {
	s.mu.Lock()
	var hit *StatusFault
	for i := range s.faults.Status {
		f := &s.faults.Status[i]
		if (f.Endpoint == AnyEndpoint || f.Endpoint == ep) && fileMatch(f.File, file) &&
			(f.Method == "" || f.Method == r.Method) && s.take(f, f.Times) {
			hit = f
			break
		}
	}
	s.mu.Unlock()
	if hit == nil {
		return false
	}
	if hit.RetryAfter != "" {
		w.Header().Set("Retry-After", hit.RetryAfter)
	}
	if hit.RateLimit != "" {
		w.Header().Set("RateLimit", hit.RateLimit)
		w.Header().Set("RateLimit-Policy", `"fixed window";"api";q=500;w=300`)
	}
	s.writeError(w, r, hit.Code, hit.ErrorCode, http.StatusText(hit.Code))
	return true
}

// writeError answers like the Hub: X-Error-Code, X-Error-Message,
// X-Request-Id and a JSON body.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	s.mu.Lock()
	s.reqID++
	id := s.reqID
	s.mu.Unlock()
	h := w.Header()
	if code != "" {
		h.Set("X-Error-Code", code)
	}
	if msg != "" {
		h.Set("X-Error-Message", msg)
	}
	h.Set("X-Request-Id", fmt.Sprintf("Root=1-hubtest-%06d", id))
	body, _ := json.Marshal(map[string]string{"error": msg})
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// splitPath splits an escaped path into unescaped segments, so that an
// escaped revision (refs%2Fpr%2F1) stays one segment.
func splitPath(escaped string) ([]string, bool) {
	segs := strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	for i, s := range segs {
		u, err := url.PathUnescape(s)
		if err != nil {
			return nil, false
		}
		segs[i] = u
	}
	return segs, true
}

// auth checks the bearer token: ok is false (and the answer written) when a
// token is present but invalid, or required and missing.
func (s *Server) auth(w http.ResponseWriter, r *http.Request) (token string, valid, ok bool) {
	token, has := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !has {
		token = ""
	}
	for _, t := range s.opts.Tokens {
		if token != "" && token == t {
			valid = true
		}
	}
	if token != "" && !valid {
		s.writeError(w, r, http.StatusUnauthorized, "", "Invalid credentials in Authorization header")
		return "", false, false
	}
	if s.opts.RequireToken && !valid {
		s.writeError(w, r, http.StatusUnauthorized, "RepoNotFound", "Repository not found (authentication required)")
		return "", false, false
	}
	return token, valid, true
}

// serveHub routes Hub requests.
func (s *Server) serveHub(w http.ResponseWriter, r *http.Request) {
	segs, ok := splitPath(r.URL.EscapedPath())
	if !ok || len(segs) < 2 {
		http.NotFound(w, r)
		return
	}
	// Which repo id, where it sits in the path, and the file (if any).
	var repoID, file string
	var ep Endpoint
	repoAt := -1
	switch {
	case len(segs) >= 4 && segs[0] == "api" && segs[1] == "models":
		repoAt, ep = 2, API
	case len(segs) >= 7 && segs[0] == "api" && segs[1] == "resolve-cache" && segs[2] == "models":
		repoAt, ep, file = 3, Resolve, strings.Join(segs[6:], "/")
	case len(segs) >= 5 && segs[2] == "resolve":
		repoAt, ep, file = 0, Resolve, strings.Join(segs[4:], "/")
	default:
		http.NotFound(w, r)
		return
	}
	repoID = segs[repoAt] + "/" + segs[repoAt+1]
	if s.statusFault(w, r, ep, file) {
		return
	}
	s.mu.Lock()
	newID, renamed := s.renames[repoID]
	s.mu.Unlock()
	if renamed {
		// Relative, like the Hub: only the repo segments change.
		raw := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
		org, name, _ := strings.Cut(newID, "/")
		raw[repoAt], raw[repoAt+1] = url.PathEscape(org), url.PathEscape(name)
		loc := "/" + strings.Join(raw, "/")
		if r.URL.RawQuery != "" {
			loc += "?" + r.URL.RawQuery
		}
		w.Header().Set("Location", loc)
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	if ep == Resolve && s.loops(file) {
		w.Header().Set("Location", r.URL.RequestURI())
		w.WriteHeader(http.StatusFound)
		return
	}
	token, valid, ok := s.auth(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	rp := s.repos[repoID]
	s.mu.Unlock()
	if rp == nil || (rp.Private && !valid) {
		status := http.StatusUnauthorized
		if valid {
			status = http.StatusNotFound
		}
		s.writeError(w, r, status, "RepoNotFound", "Repository not found")
		return
	}
	rest := segs[repoAt+2:]
	switch {
	case ep == API && len(rest) == 0:
		s.serveInfo(w, r, rp, "main")
	case ep == API && len(rest) == 2 && rest[0] == "revision":
		s.serveInfo(w, r, rp, rest[1])
	case ep == API && len(rest) >= 2 && rest[0] == "tree":
		s.serveTree(w, r, rp, rest[1], strings.Join(rest[2:], "/"))
	case ep == API && len(rest) == 1 && rest[0] == "refs":
		s.serveRefs(w, r, rp)
	case ep == API && len(rest) == 2 && rest[0] == "paths-info" && r.Method == http.MethodPost:
		s.servePathsInfo(w, r, rp, rest[1])
	case ep == Resolve:
		if rp.Gated && !s.granted(rp, token) {
			if token == "" {
				s.writeError(w, r, http.StatusUnauthorized, "GatedRepo",
					fmt.Sprintf("Access to model %s is restricted. You must have access to it and be authenticated to access it. Please log in.", rp.ID))
			} else {
				s.writeError(w, r, http.StatusForbidden, "GatedRepo",
					fmt.Sprintf("Access to model %s is restricted and you are not in the authorized list. Visit %s/%s to ask for access.", rp.ID, s.URL, rp.ID))
			}
			return
		}
		rev := segs[3] // /{org}/{name}/resolve/{rev}/{file}
		if repoAt == 3 {
			rev = segs[5] // /api/resolve-cache/models/{org}/{name}/{commit}/{file}
		}
		s.serveResolve(w, r, rp, rev, file, repoAt == 3)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) granted(rp *repo, token string) bool {
	for _, t := range rp.GrantedTokens {
		if token != "" && t == token {
			return true
		}
	}
	return false
}

func (s *Server) loops(file string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.faults.RedirectLoop {
		if f == "*" || f == file {
			return true
		}
	}
	return false
}

// lookup resolves rev, answering RevisionNotFound itself when it fails.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request, rp *repo, rev string) *commit {
	s.mu.Lock()
	c := rp.resolve(rev)
	s.mu.Unlock()
	if c == nil {
		s.writeError(w, r, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
	}
	return c
}

func sortedPaths(c *commit) []string {
	paths := make([]string, 0, len(c.files))
	for p := range c.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

func writeJSON(w http.ResponseWriter, v any) {
	data, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.Write(data)
}

// serveInfo answers /api/models/{repo}[/revision/{rev}].
func (s *Server) serveInfo(w http.ResponseWriter, r *http.Request, rp *repo, rev string) {
	c := s.lookup(w, r, rp, rev)
	if c == nil {
		return
	}
	blobs := r.URL.Query().Get("blobs") == "true" && !s.opts.NoBlobsMetadata
	var siblings []map[string]any
	for _, p := range sortedPaths(c) {
		b := c.files[p]
		sib := map[string]any{"rfilename": p}
		if blobs {
			sib["size"] = b.Size
			if b.LFS {
				sib["blobId"] = b.PointerSHA1
				sib["lfs"] = map[string]any{"sha256": b.SHA256, "size": b.Size, "pointerSize": len(lfsPointer(b.SHA256, b.Size))}
			} else {
				sib["blobId"] = b.GitSHA1
			}
		}
		siblings = append(siblings, sib)
	}
	var gated any = false
	if rp.Gated {
		gated = "manual"
	}
	org, _, _ := strings.Cut(rp.ID, "/")
	info := map[string]any{
		"_id": "hubtest-" + rp.ID, "id": rp.ID, "modelId": rp.ID, "author": org, "sha": c.sha,
		"private": rp.Private, "gated": gated, "disabled": false, "tags": []string{"safetensors"},
		"library_name": "transformers", "lastModified": "2026-01-01T00:00:00.000Z", "siblings": siblings,
	}
	if rp.Phantoms > 0 {
		writePhantoms(w, info, rp.Phantoms, blobs)
		return
	}
	writeJSON(w, info)
}

// writePhantoms sends info with n phantom files appended to its siblings, generating them
// as it writes (see Repo.Phantoms).
func writePhantoms(w http.ResponseWriter, info map[string]any, n int, blobs bool) {
	siblings := info["siblings"].([]map[string]any)
	info["siblings"] = []map[string]any{} // marshalled empty, then filled in below
	head, _ := json.Marshal(info)
	open := bytes.Index(head, []byte(`"siblings":[]`)) + len(`"siblings":[`)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	bw := bufio.NewWriterSize(w, 64<<10)
	defer bw.Flush()
	bw.Write(head[:open])
	for i, sib := range siblings {
		if i > 0 {
			bw.WriteByte(',')
		}
		b, _ := json.Marshal(sib)
		bw.Write(b)
	}
	// One buffer for every entry: the server allocates nothing per phantom, so that what a
	// test measures in its own process is the client's cost.
	var sum [64]byte
	line := make([]byte, 0, 512)
	for i := range n {
		h := sha256.Sum256(strconv.AppendInt(line[:0], int64(i), 10))
		hex.Encode(sum[:], h[:])
		line = line[:0]
		if i > 0 || len(siblings) > 0 {
			line = append(line, ',')
		}
		line = append(line, `{"rfilename":"phantom/phantom-`...)
		line = strconv.AppendInt(line, 100000000+int64(i), 10)
		line = append(line, `.safetensors"`...)
		if blobs {
			line = append(line, `,"size":`...)
			line = strconv.AppendInt(line, 1000+int64(i), 10)
			line = append(line, `,"blobId":"`...)
			line = append(line, sum[:40]...)
			line = append(line, `","lfs":{"sha256":"`...)
			line = append(line, sum[:]...)
			line = append(line, `","size":`...)
			line = strconv.AppendInt(line, 1000+int64(i), 10)
			line = append(line, `,"pointerSize":134}`...)
		}
		line = append(line, '}')
		bw.Write(line)
	}
	bw.Write(head[open:])
}

// serveTree answers /api/models/{repo}/tree/{rev}[/{path}], paginated with
// a cursor and a Link header.
func (s *Server) serveTree(w http.ResponseWriter, r *http.Request, rp *repo, rev, dir string) {
	c := s.lookup(w, r, rp, rev)
	if c == nil {
		return
	}
	q := r.URL.Query()
	recursive := q.Get("recursive") == "true"
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	type entry = map[string]any
	var entries []entry
	dirs := map[string]bool{}
	for _, p := range sortedPaths(c) {
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		rel := strings.TrimPrefix(p, prefix)
		// Directories along the way.
		parts := strings.Split(rel, "/")
		for i := 1; i < len(parts); i++ {
			d := prefix + strings.Join(parts[:i], "/")
			if !dirs[d] && (recursive || i == 1) {
				dirs[d] = true
				entries = append(entries, entry{"type": "directory", "oid": gitBlobID([]byte(d)), "size": 0, "path": d})
			}
		}
		if !recursive && len(parts) > 1 {
			continue
		}
		b := c.files[p]
		e := entry{"type": "file", "path": p, "size": b.Size, "oid": b.GitSHA1}
		if b.LFS {
			e["oid"] = b.PointerSHA1
			e["lfs"] = map[string]any{"oid": b.SHA256, "size": b.Size, "pointerSize": len(lfsPointer(b.SHA256, b.Size))}
		}
		entries = append(entries, e)
	}
	if dir != "" && len(entries) == 0 {
		s.writeError(w, r, http.StatusNotFound, "EntryNotFound", fmt.Sprintf("%s does not exist on %q", dir, rev))
		return
	}
	start, _ := strconv.Atoi(q.Get("cursor"))
	start = min(max(start, 0), len(entries))
	end := min(start+s.opts.TreePageSize, len(entries))
	if end < len(entries) {
		next := *r.URL
		nq := next.Query()
		nq.Set("cursor", strconv.Itoa(end))
		next.RawQuery = nq.Encode()
		w.Header().Set("Link", fmt.Sprintf("<%s%s>; rel=\"next\"", s.URL, next.RequestURI()))
	}
	page := entries[start:end]
	if page == nil {
		page = []entry{}
	}
	writeJSON(w, page)
}

// servePathsInfo answers POST /api/models/{repo}/paths-info/{rev}: the
// entries for the paths asked, as JSON ({"paths": [...], "expand": true},
// what huggingface.js sends) or a form (paths=a&paths=b&expand=True, what
// huggingface_hub sends). With expand, each entry has its lastCommit.
func (s *Server) servePathsInfo(w http.ResponseWriter, r *http.Request, rp *repo, rev string) {
	c := s.lookup(w, r, rp, rev)
	if c == nil {
		return
	}
	var req struct {
		Paths  []string `json:"paths"`
		Expand bool     `json:"expand"`
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
			s.writeError(w, r, http.StatusBadRequest, "", "invalid JSON body")
			return
		}
	} else {
		r.ParseForm()
		req.Paths = r.PostForm["paths"]
		req.Expand = strings.EqualFold(r.PostForm.Get("expand"), "true")
	}
	out := []map[string]any{}
	for _, p := range req.Paths {
		b := c.files[p]
		if b == nil {
			continue
		}
		e := map[string]any{"type": "file", "path": p, "size": b.Size, "oid": b.GitSHA1}
		if b.LFS {
			e["oid"] = b.PointerSHA1
			e["lfs"] = map[string]any{"oid": b.SHA256, "size": b.Size, "pointerSize": len(lfsPointer(b.SHA256, b.Size))}
		}
		if req.Expand {
			e["lastCommit"] = map[string]any{"id": c.sha, "title": "hubtest commit", "date": "2026-01-01T00:00:00.000Z"}
		}
		out = append(out, e)
	}
	writeJSON(w, out)
}

// serveRefs answers /api/models/{repo}/refs.
func (s *Server) serveRefs(w http.ResponseWriter, r *http.Request, rp *repo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := func(m map[string]string, kind string) []map[string]string {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		out := []map[string]string{}
		for _, n := range names {
			out = append(out, map[string]string{"name": n, "ref": "refs/" + kind + "/" + n, "targetCommit": m[n]})
		}
		return out
	}
	writeJSON(w, map[string]any{"branches": list(rp.branches, "heads"), "tags": list(rp.tags, "tags"), "converts": []any{}})
}

// serveResolve answers HEAD/GET on /resolve/ and the resolve-cache hop.
func (s *Server) serveResolve(w http.ResponseWriter, r *http.Request, rp *repo, rev, file string, hop bool) {
	c := s.lookup(w, r, rp, rev)
	if c == nil {
		return
	}
	w.Header().Set("X-Repo-Commit", c.sha)
	b := c.files[file]
	if b == nil {
		s.writeError(w, r, http.StatusNotFound, "EntryNotFound", "Entry not found")
		return
	}
	h := w.Header()
	switch {
	case b.LFS:
		loc := s.signedURL(b, file)
		h.Set("Location", loc)
		h.Set("X-Linked-Etag", `"`+b.SHA256+`"`)
		h.Set("X-Linked-Size", strconv.FormatInt(b.Size, 10))
		// The 302's own ETag is the pointer's git id, and its
		// Content-Length its little body: neither describes the file.
		h.Set("ETag", `"`+b.PointerSHA1+`"`)
		body := "Found. Redirecting to " + loc
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusFound)
		if r.Method != http.MethodHead {
			io.WriteString(w, body)
		}
	case s.opts.ResolveCacheHop && !hop:
		segs := strings.Split(file, "/")
		for i := range segs {
			segs[i] = url.PathEscape(segs[i])
		}
		h.Set("Location", fmt.Sprintf("/api/resolve-cache/models/%s/%s/%s?etag=%%22%s%%22", rp.ID, c.sha, strings.Join(segs, "/"), b.GitSHA1))
		w.WriteHeader(http.StatusTemporaryRedirect)
	default:
		s.serveContent(w, r, b, file, `"`+b.GitSHA1+`"`)
	}
}

// signedURL is the CDN address of an LFS blob, with an expiry and an HMAC
// like a presigned S3 URL.
func (s *Server) signedURL(b *blob, file string) string {
	exp := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	return fmt.Sprintf("%s/%s?file=%s&expires=%s&sig=%s", s.CDNURL, b.SHA256, url.QueryEscape(file), exp, s.sign(b.SHA256, file, exp))
}

func (s *Server) sign(sha, file, exp string) string {
	m := hmac.New(sha256.New, s.secret)
	fmt.Fprintf(m, "%s|%s|%s", sha, file, exp)
	return hex.EncodeToString(m.Sum(nil))
}

// serveCDN serves LFS blobs by sha256 to holders of a signed URL.
func (s *Server) serveCDN(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		s.mu.Lock()
		s.authHits++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "<Error><Code>InvalidArgument</Code><Message>Only one auth mechanism allowed</Message></Error>")
		return
	}
	sha := strings.TrimPrefix(r.URL.Path, "/")
	q := r.URL.Query()
	file, exp := q.Get("file"), q.Get("expires")
	if s.statusFault(w, r, CDN, file) {
		return
	}
	if !hmac.Equal([]byte(q.Get("sig")), []byte(s.sign(sha, file, exp))) {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, "<Error><Code>SignatureDoesNotMatch</Code></Error>")
		return
	}
	if e, err := strconv.ParseInt(exp, 10, 64); err != nil || time.Now().Unix() > e {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, "<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>")
		return
	}
	s.mu.Lock()
	b := s.blobs[sha]
	s.mu.Unlock()
	if b == nil {
		http.NotFound(w, r)
		return
	}
	s.serveContent(w, r, b, file, `"`+b.SHA256+`"`)
}
