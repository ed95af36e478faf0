package hub

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anepack/anepack/hub/hubtest"
)

// rangeStart parses the first byte of a "bytes=a-b" header (-1 if none).
func rangeStart(h string) int64 {
	a, _, ok := strings.Cut(strings.TrimPrefix(h, "bytes="), "-")
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(a, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// TestDropResumes: a connection cut mid-file resumes with Range from the
// byte it stopped at; nothing is downloaded twice.
func TestDropResumes(t *testing.T) {
	const size, at = 300 << 10, 100 << 10
	srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{Drop: []hubtest.DropFault{{File: "model.safetensors", At: at, Times: 1}}}})
	_, data := oneFileRepo(t, srv, "Org/M", size)
	c, log := newClient(t, srv)
	s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.File("model.safetensors")
	mustEqualFile(t, f.LocalPath, data)
	gets := requests(srv, "cdn", "GET")
	if len(gets) != 2 {
		t.Fatalf("%d CDN GETs, want 2", len(gets))
	}
	if gets[0].Range != "" || gets[0].Bytes != at {
		t.Errorf("first GET %+v: want the whole file, cut at %d", gets[0], at)
	}
	if st := rangeStart(gets[1].Range); st != at || gets[1].Status != 206 || gets[1].Bytes != size-at {
		t.Errorf("resumed GET %+v: want bytes=%d- answered 206", gets[1], at)
	}
	if !strings.Contains(log.String(), "connection lost") {
		t.Error("the drop was not logged")
	}
}

// TestDropResumesChunk: in a parallel download only the cut chunk is
// resumed, from where it stopped.
func TestDropResumesChunk(t *testing.T) {
	const size, at = 300 << 10, 150 << 10
	srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{Drop: []hubtest.DropFault{{File: "model.safetensors", At: at, Times: 1}}}})
	_, data := oneFileRepo(t, srv, "Org/M", size)
	c, _ := newClient(t, srv)
	c.ChunkSize = 64 << 10
	s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.File("model.safetensors")
	mustEqualFile(t, f.LocalPath, data)
	var served int64
	resumed := false
	for _, g := range requests(srv, "cdn", "GET") {
		served += g.Bytes
		resumed = resumed || rangeStart(g.Range) == at
	}
	if !resumed || served != size {
		t.Errorf("resumed at %d: %v; %d bytes served for a %d-byte file", at, resumed, served, size)
	}
}

// TestCorruptRetried: one corrupted byte is caught by the sha256 check and
// the file is fetched again.
func TestCorruptRetried(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{Corrupt: []hubtest.CorruptFault{{File: "model.safetensors", At: 777, Times: 1}}}})
	_, data := oneFileRepo(t, srv, "Org/M", 100<<10)
	c, log := newClient(t, srv)
	s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.File("model.safetensors")
	mustEqualFile(t, f.LocalPath, data)
	if n := len(requests(srv, "cdn", "GET")); n != 2 {
		t.Errorf("%d downloads, want 2", n)
	}
	if !strings.Contains(log.String(), "sha256 mismatch") {
		t.Error("the mismatch was not logged")
	}
}

// TestCorruptAlways: a file that never matches ends in ErrChecksum after
// the retries, and nothing of it stays in the cache.
func TestCorruptAlways(t *testing.T) {
	for _, tc := range []struct{ file, kind string }{{"model.safetensors", "sha256"}, {"config.json", "git blob SHA-1"}} {
		t.Run(tc.file, func(t *testing.T) {
			srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{Corrupt: []hubtest.CorruptFault{{File: tc.file, At: 1}}}})
			srv.MustAddRepo(t, hubtest.Repo{ID: "Org/M", Files: []hubtest.File{
				{Path: "config.json", Data: []byte(`{"hidden_size": 64}`)},
				{Path: "model.safetensors", Data: randBytes(9, 50<<10)},
			}})
			c, _ := newClient(t, srv)
			c.Jobs = 1
			_, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
			wantKind(t, err, ErrChecksum, tc.kind, tc.file, "removed", "after 3 downloads")
			b, _ := srv.Blob("Org/M", "main", tc.file)
			rc := c.repoCache("Org/M")
			for _, p := range []string{rc.blobPath(b.Etag), rc.partPath(b.Etag), rc.partPath(b.Etag) + ".json"} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s left in the cache", p)
				}
			}
			gets := 0
			for _, r := range srv.Requests() {
				q, _ := url.ParseQuery(r.Query)
				if r.Method == "GET" && (q.Get("file") == tc.file || r.Server == "hub" && strings.HasSuffix(r.Path, "/"+tc.file)) {
					gets++
				}
			}
			if gets != 3 {
				t.Errorf("%d downloads of %s, want 1 + 2 retries", gets, tc.file)
			}
		})
	}
}

// TestRateLimited: 429s honour Retry-After and RateLimit; a wait beyond
// Backoff.MaxWait fails at once.
func TestRateLimited(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{Status: []hubtest.StatusFault{
		{Endpoint: hubtest.API, Code: 429, RetryAfter: "7", Times: 1},
		{Endpoint: hubtest.CDN, Code: 429, RateLimit: `"api";r=0;t=55`, Times: 1},
	}}})
	_, data := oneFileRepo(t, srv, "Org/M", 20<<10)
	c, _ := newClient(t, srv)
	var sl sleeps
	c.Backoff.Sleep = sl.sleep
	s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.File("model.safetensors")
	mustEqualFile(t, f.LocalPath, data)
	if got := sl.list(); !slices.Equal(got, []time.Duration{7 * time.Second, 56 * time.Second}) {
		t.Errorf("waited %v, want [7s 56s] (Retry-After, then RateLimit t+1)", got)
	}

	srv.SetFaults(hubtest.Faults{Status: []hubtest.StatusFault{{Endpoint: hubtest.API, Code: 429, RetryAfter: "3600"}}})
	c2, _ := newClient(t, srv)
	c2.Backoff.Sleep = sl.sleep
	start := time.Now()
	_, err = c2.Snapshot(context.Background(), "Org/M", "", PackFilter)
	wantKind(t, err, ErrRateLimited, "1h0m0s", "try again later")
	if time.Since(start) > 5*time.Second {
		t.Error("a long Retry-After was waited for")
	}
}

// TestServerErrorsRetried: 5xx on the API, the HEAD and the CDN are
// retried; a server that keeps failing gives ErrServer after the retries.
func TestServerErrorsRetried(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{Status: []hubtest.StatusFault{
		{Endpoint: hubtest.API, Code: 500, Times: 1},
		{Endpoint: hubtest.API, Code: 408, Times: 1},
		{Endpoint: hubtest.Resolve, Method: "HEAD", Code: 503, Times: 1},
		{Endpoint: hubtest.CDN, Code: 502, Times: 1},
		{Endpoint: hubtest.Resolve, Method: "GET", Code: 504, Times: 1},
	}}})
	_, data := oneFileRepo(t, srv, "Org/M", 20<<10)
	c, log := newClient(t, srv)
	c.Jobs = 1
	s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.File("model.safetensors")
	mustEqualFile(t, f.LocalPath, data)
	for _, code := range []string{"HTTP 500", "HTTP 408", "HTTP 503", "HTTP 502", "HTTP 504"} {
		if !strings.Contains(log.String(), code) {
			t.Errorf("no retry logged for %s", code)
		}
	}

	srv.SetFaults(hubtest.Faults{Status: []hubtest.StatusFault{{Endpoint: hubtest.API, Code: 500}}})
	srv.ResetRequests()
	c2, _ := newClient(t, srv)
	_, err = c2.Snapshot(context.Background(), "Org/M", "", PackFilter)
	wantKind(t, err, ErrServer, "HTTP 500", "try again later")
	if n := len(srv.Requests()); n != c2.Backoff.Retries+1 {
		t.Errorf("%d attempts, want %d", n, c2.Backoff.Retries+1)
	}
}

// TestGated: 401 without a token and 403 with an ungranted one both say to
// accept the license on the model page and set HF_TOKEN.
func TestGated(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{Tokens: []string{testToken, "hf_othervalidtoken"}})
	files := modelFiles()
	srv.MustAddRepo(t, hubtest.Repo{ID: "Meta/Gated", Files: files, Gated: true, GrantedTokens: []string{testToken}})
	page := srv.URL + "/Meta/Gated"

	c, _ := newClient(t, srv)
	_, err := c.Snapshot(context.Background(), "Meta/Gated", "", PackFilter)
	wantKind(t, err, ErrGated, "gated", "accept its license", page, "HF_TOKEN")

	c, _ = newClient(t, srv)
	c.Token, c.TokenSource = "hf_othervalidtoken", "HF_TOKEN"
	_, err = c.Snapshot(context.Background(), "Meta/Gated", "", PackFilter)
	wantKind(t, err, ErrGated, "no access yet", "accept the license", page, "from HF_TOKEN")
	if strings.Contains(err.Error(), "hf_othervalidtoken") {
		t.Error("the token is in the error")
	}

	c, _ = newClient(t, srv)
	c.Token = testToken
	if _, err := c.Snapshot(context.Background(), "Meta/Gated", "", PackFilter); err != nil {
		t.Fatalf("granted token: %v", err)
	}
}

// TestPrivateAndTokens: private repos look like missing ones without a
// token; an invalid token is reported as such.
func TestPrivateAndTokens(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{Tokens: []string{testToken}})
	oneFileRepo(t, srv, "Org/Public", 1000)
	srv.MustAddRepo(t, hubtest.Repo{ID: "Org/Secret", Private: true, Files: []hubtest.File{{Path: "config.json", Data: []byte("{}")}}})

	c, _ := newClient(t, srv)
	_, err := c.Snapshot(context.Background(), "Org/Secret", "", PackFilter)
	wantKind(t, err, ErrRepoNotFound, "Org/Secret", "not found", "private", "HF_TOKEN")

	c, _ = newClient(t, srv)
	c.Token = testToken
	if _, err := c.Snapshot(context.Background(), "Org/Secret", "", PackFilter); err != nil {
		t.Fatalf("with a token: %v", err)
	}

	c, _ = newClient(t, srv)
	c.Token, c.TokenSource = "hf_wrongtoken", "/home/u/.cache/huggingface/token"
	_, err = c.Snapshot(context.Background(), "Org/Public", "", PackFilter)
	wantKind(t, err, ErrUnauthorized, "rejected the token from /home/u/.cache/huggingface/token")

	strict := hubtest.New(t, hubtest.Options{Tokens: []string{testToken}, RequireToken: true})
	oneFileRepo(t, strict, "Org/M", 1000)
	c, _ = newClient(t, strict)
	_, err = c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	wantKind(t, err, ErrRepoNotFound, "HF_TOKEN")
	c.Token = testToken
	c2, _ := newClient(t, strict)
	c2.Token = testToken
	if _, err := c2.Snapshot(context.Background(), "Org/M", "", PackFilter); err != nil {
		t.Fatalf("token required and given: %v", err)
	}
	if strict.CDNAuthViolations() != 0 {
		t.Error("the token reached the CDN")
	}
}

// TestNotFound: missing repo, revision and file each get their own error.
func TestNotFound(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{})
	oneFileRepo(t, srv, "Org/M", 1000)
	c, _ := newClient(t, srv)
	ctx := context.Background()

	_, err := c.Snapshot(ctx, "Org/Missing", "", PackFilter)
	wantKind(t, err, ErrRepoNotFound, "Org/Missing", "check the name")
	_, err = c.Snapshot(ctx, "Org/M", "v9", PackFilter)
	wantKind(t, err, ErrRevisionNotFound, `"v9"`, "Org/M")
	_, err = c.DownloadFile(ctx, "Org/M", "", "missing.json")
	wantKind(t, err, ErrEntryNotFound, "missing.json")
	// The listing has it but /resolve/ says EntryNotFound (the repo
	// changed under us, or a mirror is incomplete).
	srv.SetFaults(hubtest.Faults{Status: []hubtest.StatusFault{{Endpoint: hubtest.Resolve, File: "config.json", Code: 404, ErrorCode: "EntryNotFound"}}})
	_, err = c.Snapshot(ctx, "Org/M", "", PackFilter)
	wantKind(t, err, ErrEntryNotFound, "config.json", "Org/M")
	_, err = c.Snapshot(ctx, "not a repo", "", PackFilter)
	if err == nil || !strings.Contains(err.Error(), "Org/Name") {
		t.Errorf("invalid repo id: %v", err)
	}
}

// TestRedirectLoop: a /resolve/ that redirects to itself fails cleanly.
func TestRedirectLoop(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{RedirectLoop: []string{"config.json"}}})
	oneFileRepo(t, srv, "Org/M", 1000)
	c, _ := newClient(t, srv)
	_, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	wantKind(t, err, ErrProtocol, "redirect loop", "config.json")
	n := 0
	for _, r := range requests(srv, "hub", "HEAD") {
		if strings.HasSuffix(r.Path, "/config.json") {
			n++
		}
	}
	if n != maxRedirects+1 {
		t.Errorf("%d HEADs before giving up, want %d", n, maxRedirects+1)
	}
}

// TestUnsafeSibling: a listing with ../../etc/passwd is refused before
// anything is written.
func TestUnsafeSibling(t *testing.T) {
	for _, noBlobs := range []bool{false, true} {
		srv := hubtest.New(t, hubtest.Options{NoBlobsMetadata: noBlobs})
		srv.MustAddRepo(t, hubtest.Repo{ID: "Evil/M", Files: []hubtest.File{
			{Path: "config.json", Data: []byte("{}")},
			{Path: "../../etc/passwd", Data: []byte("root:x:0:0::/root:/bin/sh\n")},
		}})
		base := t.TempDir()
		c, _ := newClient(t, srv)
		c.CacheDir = filepath.Join(base, "a", "b", "cache")
		_, err := c.Snapshot(context.Background(), "Evil/M", "", nil)
		wantKind(t, err, ErrUnsafePath, "../../etc/passwd")
		if got := listDir(t, base); len(got) != 0 {
			t.Errorf("noBlobs=%v: written %v", noBlobs, got)
		}
		if n := len(requests(srv, "", "HEAD")) + len(requests(srv, "cdn", "")); n != 0 {
			t.Errorf("%d file requests after an unsafe listing", n)
		}
	}
}

// TestStallResumes: a connection that stops sending is abandoned after
// StallTimeout and the download resumes.
func TestStallResumes(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{Stall: []hubtest.StallFault{{File: "model.safetensors", At: 60 << 10, For: time.Minute, Times: 1}}}})
	_, data := oneFileRepo(t, srv, "Org/M", 200<<10)
	c, log := newClient(t, srv)
	c.StallTimeout = 500 * time.Millisecond
	start := time.Now()
	s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.File("model.safetensors")
	mustEqualFile(t, f.LocalPath, data)
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %v", el)
	}
	if !strings.Contains(log.String(), "stalled") {
		t.Error("the stall was not logged")
	}
	gets := requests(srv, "cdn", "GET")
	if len(gets) != 2 || rangeStart(gets[1].Range) != 60<<10 {
		t.Errorf("requests %+v: want a resume at %d", gets, 60<<10)
	}

	// A connection that stalls every time gives up with a clear error.
	srv.SetFaults(hubtest.Faults{Stall: []hubtest.StallFault{{File: "model.safetensors", At: 10, For: time.Minute}}})
	c2, _ := newClient(t, srv)
	c2.StallTimeout, c2.Backoff.Retries = 100*time.Millisecond, 1
	_, err = c2.Snapshot(context.Background(), "Org/M", "", PackFilter)
	wantKind(t, err, ErrNetwork, "stalled", "model.safetensors")
}

// TestMetadataTimeout: a server that accepts connections but never
// answers times out instead of hanging.
func TestMetadataTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, conn) // hold it open, say nothing
		}
	}()
	c, _ := newClient(t, nil)
	c.Endpoint = "http://" + ln.Addr().String()
	c.MetadataTimeout, c.Backoff.Retries = 100*time.Millisecond, 1
	start := time.Now()
	_, err = c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	wantKind(t, err, ErrNetwork, "stalled", c.Endpoint)
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("took %v to time out", el)
	}
}

// TestRangeIgnored: a server that answers 200 to a Range request.
func TestRangeIgnored(t *testing.T) {
	const size = 300 << 10
	t.Run("resume", func(t *testing.T) {
		srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{
			Drop:        []hubtest.DropFault{{File: "model.safetensors", At: 100 << 10, Times: 1}},
			IgnoreRange: []hubtest.IgnoreRangeFault{{File: "model.safetensors"}},
		}})
		_, data := oneFileRepo(t, srv, "Org/M", size)
		c, log := newClient(t, srv)
		s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := s.File("model.safetensors")
		mustEqualFile(t, f.LocalPath, data)
		gets := requests(srv, "cdn", "GET")
		if len(gets) != 2 || gets[1].Range == "" || gets[1].Status != 200 {
			t.Fatalf("requests %+v: want a Range request answered 200", gets)
		}
		if !strings.Contains(log.String(), "ignored the Range") {
			t.Error("not logged")
		}
	})
	t.Run("chunks", func(t *testing.T) {
		srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{IgnoreRange: []hubtest.IgnoreRangeFault{{File: "model.safetensors"}}}})
		_, data := oneFileRepo(t, srv, "Org/M", size)
		c, _ := newClient(t, srv)
		c.ChunkSize = 64 << 10
		s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := s.File("model.safetensors")
		mustEqualFile(t, f.LocalPath, data)
		// The probe's 200 carries the whole file and is used as is.
		if gets := requests(srv, "cdn", "GET"); len(gets) != 1 || gets[0].Bytes != size {
			t.Fatalf("requests %+v: want one GET whose 200 body is used", gets)
		}
	})
	t.Run("part", func(t *testing.T) {
		srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{IgnoreRange: []hubtest.IgnoreRangeFault{{File: "model.safetensors"}}}})
		_, data := oneFileRepo(t, srv, "Org/M", size)
		c, _ := newClient(t, srv)
		b, _ := srv.Blob("Org/M", "main", "model.safetensors")
		part := c.repoCache("Org/M").partPath(b.Etag)
		os.MkdirAll(filepath.Dir(part), 0o755)
		os.WriteFile(part, data[:size/2], 0o644)
		s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := s.File("model.safetensors")
		mustEqualFile(t, f.LocalPath, data)
	})
}

// TestExpiredCDNURL: a CDN 403 gets a fresh signed URL from the Hub.
func TestExpiredCDNURL(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{Faults: hubtest.Faults{Status: []hubtest.StatusFault{{Endpoint: hubtest.CDN, Code: 403, Times: 1}}}})
	_, data := oneFileRepo(t, srv, "Org/M", 50<<10)
	c, _ := newClient(t, srv)
	s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.File("model.safetensors")
	mustEqualFile(t, f.LocalPath, data)
	heads := 0
	for _, r := range requests(srv, "hub", "HEAD") {
		if strings.HasSuffix(r.Path, "/model.safetensors") {
			heads++
		}
	}
	if heads != 2 {
		t.Errorf("%d HEADs for the file, want 2 (the second renews the URL)", heads)
	}
}

// TestServerUnreachable: nothing listening gives ErrNetwork naming the
// endpoint, after the retries.
func TestServerUnreachable(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	c, _ := newClient(t, nil)
	c.Endpoint = "http://" + addr
	var sl sleeps
	c.Backoff.Sleep = sl.sleep
	_, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	wantKind(t, err, ErrNetwork, fmt.Sprintf("cannot reach %s", c.Endpoint))
	if n := len(sl.list()); n != c.Backoff.Retries {
		t.Errorf("%d retries, want %d", n, c.Backoff.Retries)
	}
}
