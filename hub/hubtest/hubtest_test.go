package hubtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func do(t *testing.T, method, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

func content(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + i>>8)
	}
	return b
}

func setup(t *testing.T, opts Options) (*Server, string, []byte) {
	s := New(t, opts)
	weights := content(100 << 10)
	commit := s.MustAddRepo(t, Repo{ID: "Org/M", Files: []File{
		{Path: "config.json", Data: []byte(`{"x":1}`)},
		{Path: "model.safetensors", Data: weights},
		{Path: "sub/dir/notes.txt", Data: []byte("hi")},
	}})
	return s, commit, weights
}

func TestResolveHeaders(t *testing.T) {
	s, commit, weights := setup(t, Options{})
	b, _ := s.Blob("Org/M", "main", "model.safetensors")
	resp, _ := do(t, "HEAD", s.URL+"/Org/M/resolve/main/model.safetensors")
	h := resp.Header
	if resp.StatusCode != 302 || h.Get("X-Repo-Commit") != commit || h.Get("X-Linked-Etag") != `"`+b.SHA256+`"` ||
		h.Get("X-Linked-Size") != fmt.Sprint(len(weights)) || h.Get("ETag") != `"`+b.PointerSHA1+`"` ||
		!strings.HasPrefix(h.Get("Location"), s.CDNURL+"/"+b.SHA256+"?") || resp.ContentLength >= int64(len(weights)) {
		t.Fatalf("LFS HEAD: %d %v", resp.StatusCode, h)
	}
	cfg, _ := s.Blob("Org/M", "main", "config.json")
	resp, body := do(t, "GET", s.URL+"/Org/M/resolve/"+commit+"/config.json")
	if resp.StatusCode != 200 || resp.Header.Get("ETag") != `"`+cfg.GitSHA1+`"` || string(body) != `{"x":1}` ||
		resp.Header.Get("X-Repo-Commit") != commit {
		t.Fatalf("git GET: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	// The git blob id is git's: sha1("blob 7\0" + content).
	if cfg.GitSHA1 != gitBlobID([]byte(`{"x":1}`)) || len(cfg.GitSHA1) != 40 {
		t.Errorf("git blob id %s", cfg.GitSHA1)
	}
	resp, _ = do(t, "GET", s.URL+"/Org/M/resolve/main/sub/dir/notes.txt")
	if resp.StatusCode != 200 {
		t.Errorf("nested file: %d", resp.StatusCode)
	}
}

func TestCDN(t *testing.T) {
	s, _, weights := setup(t, Options{})
	resp, _ := do(t, "HEAD", s.URL+"/Org/M/resolve/main/model.safetensors")
	loc := resp.Header.Get("Location")
	resp, body := do(t, "GET", loc, "Range", "bytes=10-19")
	if resp.StatusCode != 206 || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 10-19/%d", len(weights)) || !bytes.Equal(body, weights[10:20]) {
		t.Fatalf("range: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, body = do(t, "GET", loc, "Range", "bytes=-5"); resp.StatusCode != 206 || !bytes.Equal(body, weights[len(weights)-5:]) {
		t.Errorf("suffix range: %d", resp.StatusCode)
	}
	if resp, body = do(t, "GET", loc, "Range", "bytes=5-", "If-Range", `"stale"`); resp.StatusCode != 200 || len(body) != len(weights) {
		t.Errorf("stale If-Range: %d", resp.StatusCode)
	}
	if resp, _ = do(t, "GET", loc, "Range", fmt.Sprintf("bytes=%d-", len(weights))); resp.StatusCode != 416 {
		t.Errorf("unsatisfiable: %d", resp.StatusCode)
	}
	if resp, _ = do(t, "GET", loc, "Authorization", "Bearer x"); resp.StatusCode != 400 || s.CDNAuthViolations() != 1 {
		t.Errorf("token on the CDN: %d, %d violations", resp.StatusCode, s.CDNAuthViolations())
	}
	if resp, _ = do(t, "GET", strings.Replace(loc, "sig=", "sig=0", 1)); resp.StatusCode != 403 {
		t.Errorf("bad signature: %d", resp.StatusCode)
	}
}

func TestDiskFile(t *testing.T) {
	s := New(t, Options{})
	p := filepath.Join(t.TempDir(), "big.bin")
	data := content(3 << 20)
	os.WriteFile(p, data, 0o644)
	s.MustAddRepo(t, Repo{ID: "Org/D", Files: []File{{Path: "model.safetensors", Disk: p}}})
	resp, _ := do(t, "HEAD", s.URL+"/Org/D/resolve/main/model.safetensors")
	resp, body := do(t, "GET", resp.Header.Get("Location"))
	if resp.StatusCode != 200 || !bytes.Equal(body, data) {
		t.Fatalf("disk file: %d, %d bytes", resp.StatusCode, len(body))
	}
}

func TestInfoTreeRefs(t *testing.T) {
	s, commit, _ := setup(t, Options{TreePageSize: 2})
	var info struct {
		SHA      string
		Siblings []map[string]any
	}
	_, body := do(t, "GET", s.URL+"/api/models/Org/M/revision/main?blobs=true")
	if err := json.Unmarshal(body, &info); err != nil || info.SHA != commit || len(info.Siblings) != 3 {
		t.Fatalf("info: %v %s", err, body)
	}
	lfs := info.Siblings[1]["lfs"].(map[string]any)
	if info.Siblings[1]["rfilename"] != "model.safetensors" || lfs["sha256"] == nil || info.Siblings[1]["size"] == nil {
		t.Errorf("LFS sibling %v", info.Siblings[1])
	}
	_, body = do(t, "GET", s.URL+"/api/models/Org/M")
	info.Siblings = nil
	json.Unmarshal(body, &info)
	if info.Siblings[0]["size"] != nil {
		t.Errorf("size without blobs=true: %v", info.Siblings[0])
	}
	// Tree: 3 files + 2 directories, pages of 2, linked by cursor.
	var all []map[string]any
	next := s.URL + "/api/models/Org/M/tree/main?recursive=true"
	for pages := 0; next != ""; pages++ {
		resp, body := do(t, "GET", next)
		var page []map[string]any
		json.Unmarshal(body, &page)
		all = append(all, page...)
		next = ""
		if l := resp.Header.Get("Link"); l != "" {
			next = l[1:strings.Index(l, ">")]
		}
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
	}
	if len(all) != 5 || all[2]["type"] != "directory" {
		t.Errorf("tree: %v", all)
	}
	_, body = do(t, "GET", s.URL+"/api/models/Org/M/refs")
	if !strings.Contains(string(body), `"targetCommit":"`+commit+`"`) {
		t.Errorf("refs: %s", body)
	}
}

func TestErrorsAndAccess(t *testing.T) {
	s, _, _ := setup(t, Options{Tokens: []string{"hf_good", "hf_other"}})
	s.MustAddRepo(t, Repo{ID: "Org/Gated", Gated: true, GrantedTokens: []string{"hf_good"}, Files: []File{{Path: "a", Data: []byte("a")}}})
	s.MustAddRepo(t, Repo{ID: "Org/Private", Private: true, Files: []File{{Path: "a", Data: []byte("a")}}})
	for _, tc := range []struct {
		url, token, code string
		status           int
	}{
		{"/api/models/Org/Nope", "", "RepoNotFound", 401},
		{"/api/models/Org/Private", "", "RepoNotFound", 401},
		{"/api/models/Org/Private", "hf_good", "", 200},
		{"/api/models/Org/M/revision/v9", "", "RevisionNotFound", 404},
		{"/Org/M/resolve/main/nope", "", "EntryNotFound", 404},
		{"/Org/Gated/resolve/main/a", "", "GatedRepo", 401},
		{"/Org/Gated/resolve/main/a", "hf_other", "GatedRepo", 403},
		{"/Org/Gated/resolve/main/a", "hf_good", "", 200},
		{"/api/models/Org/Gated", "", "", 200},
		{"/api/models/Org/M", "hf_bad", "", 401},
	} {
		var hdr []string
		if tc.token != "" {
			hdr = []string{"Authorization", "Bearer " + tc.token}
		}
		resp, _ := do(t, "GET", s.URL+tc.url, hdr...)
		if resp.StatusCode != tc.status || resp.Header.Get("X-Error-Code") != tc.code {
			t.Errorf("%s (token %q): %d %q, want %d %q", tc.url, tc.token, resp.StatusCode, resp.Header.Get("X-Error-Code"), tc.status, tc.code)
		}
		if tc.status >= 400 && resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("%s: no X-Request-Id", tc.url)
		}
	}
	if resp, _ := do(t, "GET", s.URL+"/Org/M/resolve/main/nope"); resp.Header.Get("X-Repo-Commit") == "" {
		t.Error("EntryNotFound without X-Repo-Commit")
	}
	s.Rename("Org/M", "Org/Renamed")
	resp, _ := do(t, "HEAD", s.URL+"/Org/M/resolve/main/config.json")
	if resp.StatusCode != 307 || resp.Header.Get("Location") != "/Org/Renamed/resolve/main/config.json" {
		t.Errorf("rename: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func TestFaults(t *testing.T) {
	s, _, weights := setup(t, Options{})
	head, _ := do(t, "HEAD", s.URL+"/Org/M/resolve/main/model.safetensors")
	loc := head.Header.Get("Location")

	s.SetFaults(Faults{Status: []StatusFault{{Endpoint: CDN, Code: 429, RetryAfter: "3", RateLimit: `"api";r=0;t=2`, Times: 1}}})
	if resp, _ := do(t, "GET", loc); resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" || resp.Header.Get("RateLimit") == "" {
		t.Errorf("429: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := do(t, "GET", loc); resp.StatusCode != 200 {
		t.Errorf("Times: 1 applied twice: %d", resp.StatusCode)
	}

	s.SetFaults(Faults{Corrupt: []CorruptFault{{File: "model.safetensors", At: 1000}}})
	if _, body := do(t, "GET", loc); body[1000] != weights[1000]^0xFF || !bytes.Equal(body[:1000], weights[:1000]) {
		t.Error("corrupt byte not flipped")
	}
	if _, body := do(t, "GET", loc, "Range", "bytes=2000-"); !bytes.Equal(body, weights[2000:]) {
		t.Error("a corruption outside the range was applied")
	}

	s.SetFaults(Faults{Drop: []DropFault{{File: "model.safetensors", At: 5000, Times: 1}}})
	resp, err := http.Get(loc)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if n != 5000 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("drop: read %d then %v", n, err)
	}

	s.SetFaults(Faults{IgnoreRange: []IgnoreRangeFault{{Times: 1}}})
	if resp, body := do(t, "GET", loc, "Range", "bytes=10-"); resp.StatusCode != 200 || len(body) != len(weights) {
		t.Errorf("ignore range: %d", resp.StatusCode)
	}

	s.SetFaults(Faults{Stall: []StallFault{{File: "model.safetensors", At: 100, For: 200 * time.Millisecond, Times: 1}}})
	start := time.Now()
	if _, body := do(t, "GET", loc); !bytes.Equal(body, weights) || time.Since(start) < 200*time.Millisecond {
		t.Errorf("stall: %v", time.Since(start))
	}

	s.SetFaults(Faults{RedirectLoop: []string{"config.json"}})
	resp, _ = do(t, "HEAD", s.URL+"/Org/M/resolve/main/config.json")
	if resp.StatusCode != 302 || resp.Header.Get("Location") != "/Org/M/resolve/main/config.json" {
		t.Errorf("loop: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	reqs := s.Requests()
	if last := reqs[len(reqs)-1]; last.Method != "HEAD" || last.Status != 302 || last.Server != "hub" {
		t.Errorf("last request recorded as %+v", last)
	}
}

func TestPathsInfo(t *testing.T) {
	s, commit, _ := setup(t, Options{})
	for _, body := range []struct{ ctype, data string }{
		{"application/json", `{"paths":["model.safetensors","config.json","missing"],"expand":true}`},
		{"application/x-www-form-urlencoded", "paths=model.safetensors&paths=config.json&paths=missing&expand=True"},
	} {
		resp, err := http.Post(s.URL+"/api/models/Org/M/paths-info/main", body.ctype, strings.NewReader(body.data))
		if err != nil {
			t.Fatal(err)
		}
		var entries []map[string]any
		json.NewDecoder(resp.Body).Decode(&entries)
		resp.Body.Close()
		if len(entries) != 2 || entries[0]["lfs"] == nil || entries[1]["lfs"] != nil ||
			entries[0]["lastCommit"].(map[string]any)["id"] != commit {
			t.Errorf("%s: %v", body.ctype, entries)
		}
	}
}
