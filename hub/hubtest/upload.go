package hubtest

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// Uploads adds the Hub's upload API (docs/hub.md, "Uploads") to a Server, for clients that push:
//
//	POST /api/repos/create                              {name, organization, private}: 200, or 409 if it exists
//	POST /api/models/{org}/{name}/preupload/{rev}       {files:[{path, sample, size}]} -> uploadMode lfs|regular
//	POST /{org}/{name}.git/info/lfs/objects/batch       git-lfs batch (basic and multipart transfers)
//	POST /api/complete_multipart/{oid}?sig=…            {oid, parts:[{partNumber, etag}]}: joins the parts
//	POST /api/lfs-verify/{oid}                          {oid, size}: 200 if the object is stored
//	POST /api/models/{org}/{name}/commit/{rev}          NDJSON: header, file (base64), lfsFile, deletedFile
//
// Presigned upload URLs point at a second server (StorageURL, "S3"): PUT /object/{oid}?sig=…
// for a basic transfer, PUT /part/{oid}/{n}?sig=… for a multipart one (answered with an
// ETag). Like S3 it refuses any request that carries an Authorization header (HTTP 400,
// counted by StorageAuthViolations). Uploaded objects are checked against their sha256 and
// size before they can be committed. A commit adds the files to the branch head (created if
// needed) through Server.Commit, so what was pushed is then served for download by the
// Server's ordinary endpoints; every other request goes to the Server unchanged.
//
// The endpoints are served on their own address (URL), in front of the Server's own handler,
// so that the Server's behaviour for existing tests stays exactly as it was.
type Uploads struct {
	// URL is a Hub endpoint that serves everything the Server does plus the upload API.
	URL string
	// StorageURL is the base URL of the presigned upload target.
	StorageURL string

	s              *Server
	front, storage *httptest.Server
	dir            string
	opts           UploadOptions

	mu        sync.Mutex
	objects   map[string]string // oid -> stored file
	expected  map[string]int64  // oid -> size announced in a batch
	parts     map[string]map[int]string
	etags     map[string]map[int]string
	authHits  int
	commits   int
	failParts int // part PUTs still to fail with 500
}

// UploadOptions configure Uploads.
type UploadOptions struct {
	// MultipartThreshold is the size from which objects are uploaded in parts (default
	// 8 MiB; the Hub's is larger).
	MultipartThreshold int64
	// ChunkSize is the part size of multipart uploads (default 4 MiB).
	ChunkSize int64
	// Verify adds a verify action to batch answers.
	Verify bool
	// FailParts makes the first FailParts part uploads fail with 500, as S3 sometimes does.
	FailParts int
}

// NewUploads starts the upload API in front of s; it stops when the test ends.
func NewUploads(t testing.TB, s *Server, opts UploadOptions) *Uploads {
	t.Helper()
	if opts.MultipartThreshold <= 0 {
		opts.MultipartThreshold = 8 << 20
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = 4 << 20
	}
	u := &Uploads{s: s, dir: t.TempDir(), opts: opts, objects: map[string]string{}, expected: map[string]int64{},
		parts: map[string]map[int]string{}, etags: map[string]map[int]string{}, failParts: opts.FailParts}
	hubHandler := http.HandlerFunc(s.serveHub)
	u.front = httptest.NewServer(s.record("hub", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && u.serveUpload(w, r) {
			return
		}
		hubHandler.ServeHTTP(w, r)
	})))
	u.storage = httptest.NewServer(s.record("storage", http.HandlerFunc(u.serveStorage)))
	u.URL, u.StorageURL = u.front.URL, u.storage.URL
	t.Cleanup(func() {
		u.front.CloseClientConnections()
		u.storage.CloseClientConnections()
		u.front.Close()
		u.storage.Close()
	})
	return u
}

// StorageAuthViolations counts uploads to the storage server that carried an Authorization
// header (a client leaking the Hub token to S3).
func (u *Uploads) StorageAuthViolations() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.authHits
}

// Commits counts successful commits.
func (u *Uploads) Commits() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.commits
}

// serveUpload answers the upload endpoints; false means the request is not one of them.
func (u *Uploads) serveUpload(w http.ResponseWriter, r *http.Request) bool {
	segs, ok := splitPath(r.URL.EscapedPath())
	if !ok {
		return false
	}
	switch {
	case len(segs) == 3 && segs[0] == "api" && segs[1] == "repos" && segs[2] == "create":
		if u.authorized(w, r) {
			u.createRepo(w, r)
		}
	case len(segs) == 6 && segs[0] == "api" && segs[1] == "models" && segs[4] == "preupload":
		if u.authorized(w, r) {
			u.preupload(w, r, segs[2]+"/"+segs[3])
		}
	case len(segs) == 6 && segs[0] == "api" && segs[1] == "models" && segs[4] == "commit":
		if u.authorized(w, r) {
			u.commit(w, r, segs[2]+"/"+segs[3], segs[5])
		}
	case len(segs) == 6 && strings.HasSuffix(segs[1], ".git") && segs[2] == "info" && segs[3] == "lfs" && segs[4] == "objects" && segs[5] == "batch":
		if u.authorized(w, r) {
			u.batch(w, r, segs[0]+"/"+strings.TrimSuffix(segs[1], ".git"))
		}
	case len(segs) == 3 && segs[0] == "api" && segs[1] == "complete_multipart":
		u.complete(w, r, segs[2])
	case len(segs) == 3 && segs[0] == "api" && segs[1] == "lfs-verify":
		if u.authorized(w, r) {
			u.verify(w, r, segs[2])
		}
	default:
		return false
	}
	return true
}

// authorized requires a valid token for the write API.
func (u *Uploads) authorized(w http.ResponseWriter, r *http.Request) bool {
	_, valid, ok := u.s.auth(w, r)
	if !ok {
		return false
	}
	if !valid {
		u.s.writeError(w, r, http.StatusUnauthorized, "", "Invalid username or password.")
		return false
	}
	return true
}

func (u *Uploads) repo(id string) *repo {
	u.s.mu.Lock()
	defer u.s.mu.Unlock()
	return u.s.repos[id]
}

func (u *Uploads) createRepo(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name         string `json:"name"`
		Organization string `json:"organization"`
		Private      bool   `json:"private"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Name == "" || req.Organization == "" {
		u.s.writeError(w, r, http.StatusBadRequest, "", "expected {name, organization}")
		return
	}
	id := req.Organization + "/" + req.Name
	if u.repo(id) != nil {
		u.s.writeError(w, r, http.StatusConflict, "", "You already created this model repo")
		return
	}
	if _, err := u.s.AddRepo(Repo{ID: id, Private: req.Private}); err != nil {
		u.s.writeError(w, r, http.StatusBadRequest, "", err.Error())
		return
	}
	writeJSON(w, map[string]string{"url": u.URL + "/" + id, "name": id})
}

func (u *Uploads) preupload(w http.ResponseWriter, r *http.Request, id string) {
	if u.repo(id) == nil {
		u.s.writeError(w, r, http.StatusNotFound, "RepoNotFound", "Repository not found")
		return
	}
	var req struct {
		Files []struct {
			Path   string `json:"path"`
			Sample string `json:"sample"`
			Size   int64  `json:"size"`
		} `json:"files"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Files) == 0 || len(req.Files) > 256 {
		u.s.writeError(w, r, http.StatusBadRequest, "", "expected {files:[{path, sample, size}]} with 1 to 256 files")
		return
	}
	type answer struct {
		Path         string  `json:"path"`
		UploadMode   string  `json:"uploadMode"`
		ShouldIgnore bool    `json:"shouldIgnore"`
		OID          *string `json:"oid"`
	}
	var out []answer
	for _, f := range req.Files {
		sample, err := base64.StdEncoding.DecodeString(f.Sample)
		if err != nil {
			u.s.writeError(w, r, http.StatusBadRequest, "", "sample of "+f.Path+" is not base64")
			return
		}
		mode := "regular"
		// The Hub sends binary files, large files and weight extensions to LFS.
		if f.Size >= u.s.opts.LFSThreshold || lfsExts[path.Ext(f.Path)] || bytes.IndexByte(sample, 0) >= 0 || !utf8.Valid(sample) {
			mode = "lfs"
		}
		out = append(out, answer{Path: f.Path, UploadMode: mode})
	}
	writeJSON(w, map[string]any{"files": out})
}

func (u *Uploads) batch(w http.ResponseWriter, r *http.Request, id string) {
	if u.repo(id) == nil {
		u.s.writeError(w, r, http.StatusNotFound, "RepoNotFound", "Repository not found")
		return
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/vnd.git-lfs+json") {
		u.s.writeError(w, r, http.StatusUnsupportedMediaType, "", "expected Content-Type application/vnd.git-lfs+json")
		return
	}
	var req struct {
		Operation string   `json:"operation"`
		Transfers []string `json:"transfers"`
		HashAlgo  string   `json:"hash_algo"`
		Objects   []struct {
			OID  string `json:"oid"`
			Size int64  `json:"size"`
		} `json:"objects"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Operation != "upload" || (req.HashAlgo != "" && req.HashAlgo != "sha256") {
		u.s.writeError(w, r, http.StatusBadRequest, "", "expected an upload batch with sha256 objects")
		return
	}
	multipart := false
	for _, t := range req.Transfers {
		multipart = multipart || t == "multipart"
	}
	type action struct {
		Href   string            `json:"href"`
		Header map[string]string `json:"header,omitempty"`
	}
	type object struct {
		OID     string            `json:"oid"`
		Size    int64             `json:"size"`
		Actions map[string]action `json:"actions,omitempty"`
	}
	var out []object
	transfer := "basic"
	for _, o := range req.Objects {
		if len(o.OID) != 64 || !isLowerHex(o.OID) || o.Size < 0 {
			u.s.writeError(w, r, http.StatusUnprocessableEntity, "", "invalid object "+o.OID)
			return
		}
		obj := object{OID: o.OID, Size: o.Size}
		u.mu.Lock()
		_, have := u.objects[o.OID]
		u.expected[o.OID] = o.Size
		u.mu.Unlock()
		u.s.mu.Lock()
		_, served := u.s.blobs[o.OID]
		u.s.mu.Unlock()
		if !have && !served {
			sig := u.s.sign(o.OID, "upload", "0")
			obj.Actions = map[string]action{}
			if multipart && o.Size >= u.opts.MultipartThreshold {
				transfer = "multipart"
				h := map[string]string{"chunk_size": strconv.FormatInt(u.opts.ChunkSize, 10)}
				n := (o.Size + u.opts.ChunkSize - 1) / u.opts.ChunkSize
				for i := int64(1); i <= n; i++ {
					h[strconv.FormatInt(i, 10)] = fmt.Sprintf("%s/part/%s/%d?sig=%s", u.StorageURL, o.OID, i, sig)
				}
				obj.Actions["upload"] = action{Href: fmt.Sprintf("%s/api/complete_multipart/%s?sig=%s", u.URL, o.OID, sig), Header: h}
			} else {
				obj.Actions["upload"] = action{Href: fmt.Sprintf("%s/object/%s?sig=%s", u.StorageURL, o.OID, sig)}
			}
			if u.opts.Verify {
				obj.Actions["verify"] = action{Href: u.URL + "/api/lfs-verify/" + o.OID}
			}
		}
		out = append(out, obj)
	}
	w.Header().Set("Content-Type", "application/vnd.git-lfs+json")
	json.NewEncoder(w).Encode(map[string]any{"transfer": transfer, "objects": out})
}

// serveStorage is the presigned upload target.
func (u *Uploads) serveStorage(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		u.mu.Lock()
		u.authHits++
		u.mu.Unlock()
		http.Error(w, "Only one auth mechanism allowed", http.StatusBadRequest)
		return
	}
	segs, ok := splitPath(r.URL.EscapedPath())
	if r.Method != http.MethodPut || !ok || len(segs) < 2 {
		http.NotFound(w, r)
		return
	}
	oid := segs[1]
	if r.URL.Query().Get("sig") != u.s.sign(oid, "upload", "0") {
		http.Error(w, "SignatureDoesNotMatch", http.StatusForbidden)
		return
	}
	switch {
	case segs[0] == "object" && len(segs) == 2:
		tmp, sum, n, err := u.receive(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := u.store(oid, tmp, sum, n); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	case segs[0] == "part" && len(segs) == 3:
		n, err := strconv.Atoi(segs[2])
		if err != nil || n < 1 {
			http.NotFound(w, r)
			return
		}
		u.mu.Lock()
		fail := u.failParts > 0
		if fail {
			u.failParts--
		}
		u.mu.Unlock()
		if fail {
			io.Copy(io.Discard, r.Body)
			http.Error(w, "InternalError", http.StatusInternalServerError)
			return
		}
		f, err := os.CreateTemp(u.dir, "part-*")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h := md5.New()
		_, err = io.Copy(io.MultiWriter(f, h), r.Body)
		f.Close()
		if err != nil {
			os.Remove(f.Name())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		etag := `"` + hex.EncodeToString(h.Sum(nil)) + `"`
		u.mu.Lock()
		if u.parts[oid] == nil {
			u.parts[oid], u.etags[oid] = map[int]string{}, map[int]string{}
		}
		u.parts[oid][n], u.etags[oid][n] = f.Name(), etag
		u.mu.Unlock()
		w.Header().Set("ETag", etag)
		w.WriteHeader(http.StatusOK)
	default:
		http.NotFound(w, r)
	}
}

// receive stores a body in a temp file and hashes it.
func (u *Uploads) receive(body io.Reader) (string, string, int64, error) {
	f, err := os.CreateTemp(u.dir, "object-*")
	if err != nil {
		return "", "", 0, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), body)
	f.Close()
	if err != nil {
		os.Remove(f.Name())
		return "", "", 0, err
	}
	return f.Name(), hex.EncodeToString(h.Sum(nil)), n, nil
}

// store keeps an uploaded object after checking it against its oid and announced size.
func (u *Uploads) store(oid, tmp, sum string, n int64) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if sum != oid {
		os.Remove(tmp)
		return fmt.Errorf("content sha256 %s does not match the object id %s", sum, oid)
	}
	if want, ok := u.expected[oid]; ok && want != n {
		os.Remove(tmp)
		return fmt.Errorf("object %s: %d bytes, the batch announced %d", oid, n, want)
	}
	dst := filepath.Join(u.dir, oid)
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	u.objects[oid] = dst
	return nil
}

func (u *Uploads) complete(w http.ResponseWriter, r *http.Request, oid string) {
	if r.URL.Query().Get("sig") != u.s.sign(oid, "upload", "0") {
		u.s.writeError(w, r, http.StatusForbidden, "", "invalid signature")
		return
	}
	var req struct {
		OID   string `json:"oid"`
		Parts []struct {
			PartNumber int    `json:"partNumber"`
			ETag       string `json:"etag"`
		} `json:"parts"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.OID != oid || len(req.Parts) == 0 {
		u.s.writeError(w, r, http.StatusBadRequest, "", "expected {oid, parts:[{partNumber, etag}]}")
		return
	}
	u.mu.Lock()
	parts, etags := u.parts[oid], u.etags[oid]
	u.mu.Unlock()
	sort.Slice(req.Parts, func(i, j int) bool { return req.Parts[i].PartNumber < req.Parts[j].PartNumber })
	var files []string
	for i, p := range req.Parts {
		if p.PartNumber != i+1 || parts[p.PartNumber] == "" || etags[p.PartNumber] != p.ETag {
			u.s.writeError(w, r, http.StatusBadRequest, "", fmt.Sprintf("part %d: missing or etag %s does not match", p.PartNumber, p.ETag))
			return
		}
		files = append(files, parts[p.PartNumber])
	}
	pr, pw := io.Pipe()
	go func() {
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			_, err = io.Copy(pw, fh)
			fh.Close()
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.Close()
	}()
	tmp, sum, n, err := u.receive(pr)
	if err == nil {
		err = u.store(oid, tmp, sum, n)
	}
	if err != nil {
		u.s.writeError(w, r, http.StatusBadRequest, "", err.Error())
		return
	}
	for _, f := range files {
		os.Remove(f)
	}
	writeJSON(w, map[string]string{"oid": oid})
}

func (u *Uploads) verify(w http.ResponseWriter, r *http.Request, oid string) {
	var req struct {
		OID  string `json:"oid"`
		Size int64  `json:"size"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	u.mu.Lock()
	p, ok := u.objects[oid]
	u.mu.Unlock()
	if fi, err := os.Stat(p); !ok || err != nil || fi.Size() != req.Size || req.OID != oid {
		u.s.writeError(w, r, http.StatusNotFound, "", "object "+oid+" not found")
		return
	}
	writeJSON(w, map[string]string{"oid": oid})
}

// commit applies an NDJSON commit to the branch head.
func (u *Uploads) commit(w http.ResponseWriter, r *http.Request, id, rev string) {
	rp := u.repo(id)
	if rp == nil {
		u.s.writeError(w, r, http.StatusNotFound, "RepoNotFound", "Repository not found")
		return
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-ndjson") {
		u.s.writeError(w, r, http.StatusUnsupportedMediaType, "", "expected Content-Type application/x-ndjson")
		return
	}
	// Start from the branch head's files.
	files := map[string]File{}
	u.s.mu.Lock()
	if head := rp.commits[rp.branches[rev]]; head != nil {
		for p, b := range head.files {
			st := Git
			if b.LFS {
				st = LFS
			}
			files[p] = File{Path: p, Data: b.data, Disk: b.disk, Storage: st}
		}
	}
	u.s.mu.Unlock()
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	sawHeader := false
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var op struct {
			Key   string `json:"key"`
			Value struct {
				Summary  string `json:"summary"`
				Path     string `json:"path"`
				Content  string `json:"content"`
				Encoding string `json:"encoding"`
				Algo     string `json:"algo"`
				OID      string `json:"oid"`
			} `json:"value"`
		}
		if err := json.Unmarshal(line, &op); err != nil {
			u.s.writeError(w, r, http.StatusBadRequest, "", "invalid NDJSON line: "+err.Error())
			return
		}
		v := op.Value
		switch op.Key {
		case "header":
			sawHeader = v.Summary != ""
		case "file":
			data, err := base64.StdEncoding.DecodeString(v.Content)
			if err != nil || v.Encoding != "base64" || v.Path == "" {
				u.s.writeError(w, r, http.StatusBadRequest, "", "file "+v.Path+": expected base64 content")
				return
			}
			files[v.Path] = File{Path: v.Path, Data: data, Storage: Git}
		case "lfsFile":
			u.mu.Lock()
			obj, ok := u.objects[v.OID]
			u.mu.Unlock()
			if !ok {
				u.s.mu.Lock()
				b, served := u.s.blobs[v.OID]
				u.s.mu.Unlock()
				if !served {
					u.s.writeError(w, r, http.StatusUnprocessableEntity, "", "LFS pointer pointed to a file that does not exist: "+v.Path)
					return
				}
				files[v.Path] = File{Path: v.Path, Data: b.data, Disk: b.disk, Storage: LFS}
				continue
			}
			if v.Algo != "sha256" || v.Path == "" {
				u.s.writeError(w, r, http.StatusBadRequest, "", "lfsFile "+v.Path+": expected algo sha256")
				return
			}
			files[v.Path] = File{Path: v.Path, Disk: obj, Storage: LFS}
		case "deletedFile":
			delete(files, v.Path)
		default:
			u.s.writeError(w, r, http.StatusBadRequest, "", "unknown commit operation "+op.Key)
			return
		}
	}
	if !sawHeader {
		u.s.writeError(w, r, http.StatusBadRequest, "", "the commit has no header with a summary")
		return
	}
	var list []File
	for _, f := range files {
		list = append(list, f)
	}
	sha, err := u.s.Commit(id, rev, list)
	if err != nil {
		u.s.writeError(w, r, http.StatusBadRequest, "", err.Error())
		return
	}
	u.mu.Lock()
	u.commits++
	u.mu.Unlock()
	writeJSON(w, map[string]any{"commitOid": sha, "commitUrl": u.URL + "/" + id + "/commit/" + sha, "pullRequestUrl": nil})
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
