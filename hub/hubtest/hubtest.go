// Package hubtest runs a fake Hugging Face Hub on loopback for tests. It
// speaks the parts of the real protocol that downloaders use (see
// docs/hub.md), with the real endpoints and headers, and can inject the
// faults real networks and CDNs produce.
//
// Two servers are started: the Hub (Server.URL, what HF_ENDPOINT points
// at) and a "CDN" on another port (another host, as far as a client can
// tell) that LFS downloads are redirected to with a signed URL.
//
// Hub endpoints:
//
//	GET  /api/models/{org}/{name}[/revision/{rev}][?blobs=true]   model info: id, sha, private, gated, siblings[]
//	GET  /api/models/{org}/{name}/tree/{rev}[/{path}][?recursive=true&cursor=…]   paginated with Link: <…>; rel="next"
//	GET  /api/models/{org}/{name}/refs                            branches[], tags[] with targetCommit
//	POST /api/models/{org}/{name}/paths-info/{rev}                entries for the paths asked (JSON or form body)
//	HEAD|GET /{org}/{name}/resolve/{rev}/{file}                   git files: 200 with ETag (git blob SHA-1),
//	                                                              X-Repo-Commit; LFS files: 302 to the CDN with
//	                                                              X-Repo-Commit, X-Linked-Etag (sha256), X-Linked-Size
//	HEAD|GET /api/resolve-cache/models/{org}/{name}/{commit}/{file}   the small-file hop (Options.ResolveCacheHop)
//
// Revisions are URL-escaped as one segment (refs%2Fpr%2F1). Errors carry
// X-Error-Code (RepoNotFound, GatedRepo, RevisionNotFound, EntryNotFound),
// X-Error-Message, X-Request-Id and a JSON body {"error": …}. A renamed repo
// answers 307 with a relative Location on its new name.
//
// The CDN serves GET /{sha256}?file=…&expires=…&sig=… with Range support
// (206, Content-Range, If-Range) and refuses a request that carries an
// Authorization header (HTTP 400, counted by CDNAuthViolations), as S3 does
// for a request with two authentication mechanisms.
//
// Every request is recorded (Requests) so tests can assert what a client
// sent, and Faults (set at start or with SetFaults) make chosen requests
// fail.
package hubtest

import (
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Storage says how a file is stored in the repo.
type Storage int

const (
	// Auto stores weights-like extensions and files of at least
	// Options.LFSThreshold bytes in LFS, the rest in git (as the Hub's
	// default .gitattributes does).
	Auto Storage = iota
	// Git stores the file in git: served by the Hub itself, etag = git blob SHA-1.
	Git
	// LFS stores the file in LFS: the Hub redirects to the CDN, etag = sha256.
	LFS
)

// File is one file of a repo commit. Give either Data or Disk.
type File struct {
	Path string
	Data []byte
	// Disk serves the content from this file instead of Data (large
	// fixtures). It is hashed once when the commit is added and must not
	// change afterwards.
	Disk    string
	Storage Storage
}

// Repo is a model repo to serve.
type Repo struct {
	ID    string // "Org/Name"
	Files []File // the first commit on "main"
	// Private repos answer RepoNotFound (401 without a token, 404 with
	// one) unless the request carries a valid token (Options.Tokens).
	Private bool
	// Gated repos list their files to anyone, but /resolve/ answers 401
	// GatedRepo without a token and 403 GatedRepo with a token not in
	// GrantedTokens.
	Gated         bool
	GrantedTokens []string
	// Phantoms adds this many files to the model info listing only: LFS
	// entries "phantom-1NNNNNNNN.safetensors" in a "phantom/" folder, with
	// made-up sizes and hashes, that cannot be downloaded. They are written
	// as the listing is sent, so a listing of hundreds of MB costs the
	// server no memory (for tests of what a huge listing costs a client).
	Phantoms int
}

// Options configure a Server.
type Options struct {
	// Tokens are the valid tokens. A request with any other bearer token
	// gets 401 "Invalid credentials in Authorization header".
	Tokens []string
	// RequireToken makes every Hub request without a valid token fail
	// with 401, as a private deployment would.
	RequireToken bool
	// TreePageSize is the tree listing's page size (default 1000).
	TreePageSize int
	// LFSThreshold is the size from which Auto files go to LFS (default 10 MiB).
	LFSThreshold int64
	// NoBlobsMetadata makes model info ignore blobs=true (siblings carry
	// rfilename only), as some mirrors do.
	NoBlobsMetadata bool
	// ResolveCacheHop makes /resolve/ of git files answer with a relative
	// 307 to /api/resolve-cache/…, as huggingface.co does now.
	ResolveCacheHop bool
	// Faults to inject from the start (see SetFaults).
	Faults Faults
}

// Endpoint selects the requests a StatusFault applies to.
type Endpoint int

const (
	// AnyEndpoint matches every request.
	AnyEndpoint Endpoint = iota
	// API matches /api/models/… (info, tree, refs).
	API
	// Resolve matches /{repo}/resolve/… and the resolve-cache hop.
	Resolve
	// CDN matches requests to the CDN server.
	CDN
)

// Faults are injected failures. In every fault, File selects the repo file
// it applies to ("" = any file; API requests have no file), and Times is
// how many matching requests get it: 0 means every one. Byte positions
// (At) are offsets in the file, not in the response, so a fault hits
// whichever request covers that byte (one chunk of a parallel download, or
// the first request of a single stream but not the resumed one).
type Faults struct {
	// Status answers with an HTTP status instead of serving.
	Status []StatusFault
	// Drop closes the connection abruptly once the bytes before At are sent.
	Drop []DropFault
	// Corrupt flips the byte at At (XOR 0xFF) in what is sent.
	Corrupt []CorruptFault
	// Stall stops sending for For once the bytes before At are sent (or
	// until the client goes away).
	Stall []StallFault
	// Trickle sends the bytes from At on one at a time, Every apart: a
	// server that never stops but never gets anywhere. It applies to any
	// response that covers bytes past At, a resumed one included.
	Trickle []TrickleFault
	// IgnoreRange answers 200 with the whole file to Range requests.
	IgnoreRange []IgnoreRangeFault
	// RedirectLoop makes /resolve/ of these files ("*" = all) redirect to
	// itself with a relative Location, forever.
	RedirectLoop []string
}

// StatusFault answers matching requests with Code. RetryAfter and
// RateLimit, when set, are sent as the Retry-After and RateLimit headers
// (e.g. `"api";r=0;t=55`); ErrorCode as X-Error-Code.
type StatusFault struct {
	Endpoint   Endpoint
	File       string
	Method     string // "" = any
	Code       int
	RetryAfter string
	RateLimit  string
	ErrorCode  string
	Times      int
}

// DropFault: see Faults.Drop.
type DropFault struct {
	File  string
	At    int64
	Times int
}

// CorruptFault: see Faults.Corrupt.
type CorruptFault struct {
	File  string
	At    int64
	Times int
}

// StallFault: see Faults.Stall.
type StallFault struct {
	File  string
	At    int64
	For   time.Duration
	Times int
}

// TrickleFault: see Faults.Trickle.
type TrickleFault struct {
	File  string
	At    int64
	Every time.Duration
	Times int
}

// IgnoreRangeFault: see Faults.IgnoreRange.
type IgnoreRangeFault struct {
	File  string
	Times int
}

// Request is one request as the server saw it.
type Request struct {
	Server        string // "hub" or "cdn"
	Method        string
	Path          string // escaped, as sent
	Query         string
	Range         string // the Range header
	Authorization bool   // an Authorization header was present
	Status        int
	Bytes         int64 // body bytes sent
}

// BlobInfo describes a served file.
type BlobInfo struct {
	Size    int64
	SHA256  string
	GitSHA1 string // git blob id of the content
	LFS     bool
	// Etag is what /resolve/ announces: SHA256 for LFS, GitSHA1 otherwise.
	Etag string
	// PointerSHA1 is the git blob id of the LFS pointer (LFS files only).
	PointerSHA1 string
}

type blob struct {
	BlobInfo
	data []byte
	disk string
}

type commit struct {
	sha   string
	files map[string]*blob
}

type repo struct {
	Repo
	branches map[string]string
	tags     map[string]string
	commits  map[string]*commit
}

// Server is a running fake Hub and CDN.
type Server struct {
	// URL is the Hub endpoint (for HF_ENDPOINT / Client.Endpoint).
	URL string
	// CDNURL is the CDN's base URL.
	CDNURL string

	hub, cdn *httptest.Server
	secret   []byte

	mu       sync.Mutex
	opts     Options
	faults   Faults
	fired    map[any]int // per fault (pointer into faults): times applied
	repos    map[string]*repo
	renames  map[string]string
	blobs    map[string]*blob // by sha256, for the CDN
	requests []Request
	authHits int
	reqID    int
	inFlight int // GET requests being answered now
	maxIn    int // the most at once since the last ResetRequests
}

// Start runs a Hub and a CDN on 127.0.0.1.
func Start(opts Options) *Server {
	if opts.TreePageSize <= 0 {
		opts.TreePageSize = 1000
	}
	if opts.LFSThreshold <= 0 {
		opts.LFSThreshold = 10 << 20
	}
	s := &Server{opts: opts, repos: map[string]*repo{}, renames: map[string]string{},
		blobs: map[string]*blob{}, secret: make([]byte, 16)}
	rand.Read(s.secret)
	s.setFaults(opts.Faults)
	s.hub = httptest.NewServer(s.record("hub", http.HandlerFunc(s.serveHub)))
	s.cdn = httptest.NewServer(s.record("cdn", http.HandlerFunc(s.serveCDN)))
	s.URL, s.CDNURL = s.hub.URL, s.cdn.URL
	return s
}

// New starts a Server that is closed when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	s := Start(opts)
	t.Cleanup(s.Close)
	return s
}

// Close stops both servers, cutting open connections.
func (s *Server) Close() {
	s.hub.CloseClientConnections()
	s.cdn.CloseClientConnections()
	s.hub.Close()
	s.cdn.Close()
}

// AddRepo creates a repo whose "main" branch has one commit with r.Files,
// and returns that commit.
func (s *Server) AddRepo(r Repo) (string, error) {
	if strings.Count(r.ID, "/") != 1 {
		return "", fmt.Errorf("hubtest: repo id %q: expected Org/Name", r.ID)
	}
	s.mu.Lock()
	if _, ok := s.repos[r.ID]; ok {
		s.mu.Unlock()
		return "", fmt.Errorf("hubtest: repo %s already exists", r.ID)
	}
	s.repos[r.ID] = &repo{Repo: r, branches: map[string]string{}, tags: map[string]string{}, commits: map[string]*commit{}}
	s.mu.Unlock()
	return s.Commit(r.ID, "main", r.Files)
}

// MustAddRepo is AddRepo for tests: it fails t on error.
func (s *Server) MustAddRepo(t testing.TB, r Repo) string {
	t.Helper()
	c, err := s.AddRepo(r)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Commit makes a new commit with exactly files on branch (created if
// needed) and returns its hash. Earlier commits stay reachable by hash.
func (s *Server) Commit(repoID, branch string, files []File) (string, error) {
	c := &commit{files: map[string]*blob{}}
	h := sha1.New()
	s.mu.Lock()
	rp := s.repos[repoID]
	parent := ""
	if rp != nil {
		parent = rp.branches[branch]
	}
	s.mu.Unlock()
	if rp == nil {
		return "", fmt.Errorf("hubtest: no repo %s", repoID)
	}
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d\x00", repoID, branch, parent, time.Now().UnixNano())
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	for _, f := range sorted {
		b, err := s.makeBlob(f)
		if err != nil {
			return "", err
		}
		if _, dup := c.files[f.Path]; dup {
			return "", fmt.Errorf("hubtest: %s listed twice", f.Path)
		}
		c.files[f.Path] = b
		fmt.Fprintf(h, "%s\x00%s\n", f.Path, b.GitSHA1)
	}
	c.sha = hex.EncodeToString(h.Sum(nil))
	s.mu.Lock()
	defer s.mu.Unlock()
	rp.commits[c.sha] = c
	rp.branches[branch] = c.sha
	for _, b := range c.files {
		if b.LFS {
			s.blobs[b.SHA256] = b
		}
	}
	return c.sha, nil
}

// Tag points tag at a branch's head or a commit.
func (s *Server) Tag(repoID, tag, rev string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repos[repoID]
	if rp == nil {
		return fmt.Errorf("hubtest: no repo %s", repoID)
	}
	c := rp.resolve(rev)
	if c == nil {
		return fmt.Errorf("hubtest: no revision %s in %s", rev, repoID)
	}
	rp.tags[tag] = c.sha
	return nil
}

// Rename moves a repo to a new id; requests for the old id get a relative
// 307 to the new one.
func (s *Server) Rename(oldID, newID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repos[oldID]
	if rp == nil {
		return fmt.Errorf("hubtest: no repo %s", oldID)
	}
	delete(s.repos, oldID)
	rp.ID = newID
	s.repos[newID] = rp
	s.renames[oldID] = newID
	return nil
}

// Blob describes the file at path in repo at rev (branch, tag or commit).
func (s *Server) Blob(repoID, rev, file string) (BlobInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repos[repoID]
	if rp == nil {
		return BlobInfo{}, false
	}
	c := rp.resolve(rev)
	if c == nil || c.files[file] == nil {
		return BlobInfo{}, false
	}
	return c.files[file].BlobInfo, true
}

// SetFaults replaces the injected faults and resets their counters.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setFaults(f)
}

func (s *Server) setFaults(f Faults) {
	s.faults = f
	s.fired = map[any]int{}
}

// Requests returns a copy of the requests seen so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ResetRequests forgets the recorded requests.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
	s.maxIn = s.inFlight
}

// InFlight is the number of GET requests being answered now. After killing
// a client, wait for it to reach 0 before ResetRequests: a request is
// recorded when its handler returns, which for a stalled one is when the
// server notices the client is gone.
func (s *Server) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

// MaxInFlight is the largest number of GET requests (on either server)
// that were being answered at the same time since the last ResetRequests.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxIn
}

// CDNAuthViolations counts CDN requests that carried an Authorization
// header (a client leaking the Hub token to the CDN).
func (s *Server) CDNAuthViolations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.authHits
}

// lfsExts are the extensions the Hub's default .gitattributes sends to LFS.
var lfsExts = map[string]bool{
	".safetensors": true, ".bin": true, ".pt": true, ".pth": true, ".ckpt": true, ".onnx": true,
	".gguf": true, ".h5": true, ".msgpack": true, ".model": true, ".npz": true, ".zst": true,
}

func (s *Server) makeBlob(f File) (*blob, error) {
	var r io.Reader
	switch {
	case f.Disk != "":
		fh, err := os.Open(f.Disk)
		if err != nil {
			return nil, fmt.Errorf("hubtest: %s: %w", f.Path, err)
		}
		defer fh.Close()
		r = fh
	default:
		r = bytes.NewReader(f.Data)
	}
	// The git blob id needs the size first: hash sha256 while counting,
	// then the git header and content again for disk files.
	h256 := sha256.New()
	n, err := io.Copy(h256, r)
	if err != nil {
		return nil, fmt.Errorf("hubtest: hashing %s: %w", f.Path, err)
	}
	g := sha1.New()
	fmt.Fprintf(g, "blob %d\x00", n)
	if f.Disk != "" {
		fh, err := os.Open(f.Disk)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(g, fh)
		fh.Close()
		if err != nil {
			return nil, err
		}
	} else {
		g.Write(f.Data)
	}
	b := &blob{data: f.Data, disk: f.Disk}
	b.Size, b.SHA256, b.GitSHA1 = n, hex.EncodeToString(h256.Sum(nil)), hex.EncodeToString(g.Sum(nil))
	switch f.Storage {
	case LFS:
		b.LFS = true
	case Auto:
		b.LFS = n >= s.opts.LFSThreshold || lfsExts[path.Ext(f.Path)]
	}
	if b.LFS {
		b.Etag = b.SHA256
		b.PointerSHA1 = gitBlobID([]byte(lfsPointer(b.SHA256, n)))
	} else {
		b.Etag = b.GitSHA1
	}
	return b, nil
}

// lfsPointer is the text git stores in place of an LFS file.
func lfsPointer(sha string, size int64) string {
	return "version https://git-lfs.github.com/spec/v1\noid sha256:" + sha + "\nsize " + strconv.FormatInt(size, 10) + "\n"
}

func gitBlobID(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// resolve maps a branch, tag or full commit hash to a commit.
func (rp *repo) resolve(rev string) *commit {
	if sha, ok := rp.branches[rev]; ok {
		return rp.commits[sha]
	}
	if sha, ok := rp.tags[rev]; ok {
		return rp.commits[sha]
	}
	return rp.commits[rev]
}

// open returns a reader over the blob's content.
func (b *blob) open() (io.ReaderAt, func(), error) {
	if b.disk == "" {
		return bytes.NewReader(b.data), func() {}, nil
	}
	f, err := os.Open(b.disk)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}
