package hub

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anepack/anepack/hub/hubtest"
)

// TestSnapshotPackFiles downloads a realistic repo with PackFilter and
// checks the files, the protocol on the wire and the cache layout.
func TestSnapshotPackFiles(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{Tokens: []string{testToken}})
	files := modelFiles()
	commit := srv.MustAddRepo(t, hubtest.Repo{ID: "Qwen/Tiny", Files: files})
	c, _ := newClient(t, srv)
	c.Token = testToken
	ctx := context.Background()

	s, err := c.Snapshot(ctx, "Qwen/Tiny", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	if s.Commit != commit || s.Revision != "main" || s.Downloaded != len(packNames) {
		t.Fatalf("snapshot %s rev %s downloaded %d; want %s main %d", s.Commit, s.Revision, s.Downloaded, commit, len(packNames))
	}
	var got []string
	for _, f := range s.Files {
		got = append(got, f.Path)
	}
	if !slices.Equal(got, packNames) {
		t.Fatalf("files %v\nwant %v", got, packNames)
	}
	rc := c.repoCache("Qwen/Tiny")
	for _, f := range files {
		fi, ok := s.File(f.Path)
		if !ok {
			if _, err := os.Lstat(rc.snapshotFile(commit, f.Path)); err == nil {
				t.Errorf("%s was not wanted but is in the snapshot", f.Path)
			}
			continue
		}
		b, _ := srv.Blob("Qwen/Tiny", commit, f.Path)
		mustEqualFile(t, fi.LocalPath, f.Data)
		if fi.Size != b.Size || fi.SHA256 != b.SHA256 || fi.LFS != b.LFS || fi.Cached {
			t.Errorf("%s: info %+v, served %+v", f.Path, fi, b)
		}
		// Relative symlink into blobs/<etag>, as huggingface_hub makes it.
		target, err := os.Readlink(fi.LocalPath)
		if err != nil || target != "../../blobs/"+b.Etag {
			t.Errorf("%s: link %q (%v), want ../../blobs/%s", f.Path, target, err, b.Etag)
		}
		mustEqualFile(t, rc.blobPath(b.Etag), f.Data)
	}
	// refs/main holds the commit without a newline.
	ref, err := os.ReadFile(filepath.Join(rc.dir, "refs", "main"))
	if err != nil || string(ref) != commit {
		t.Errorf("refs/main = %q (%v), want %q with no newline", ref, err, commit)
	}
	// trees/<commit>.json lists every file in huggingface_hub's format.
	var tree struct {
		FormatVersion int `json:"format_version"`
		Files         map[string]map[string]any
	}
	data, _ := os.ReadFile(rc.treePath(commit))
	if err := json.Unmarshal(data, &tree); err != nil || tree.FormatVersion != 1 || len(tree.Files) != len(files) {
		t.Fatalf("trees file: %v %s", err, data)
	}
	if st := tree.Files["model-00001-of-00002.safetensors"]; st["lfs_sha256"] == nil || st["blob_id"] == nil {
		t.Errorf("tree entry of an LFS file: %v", st)
	}
	if _, err := os.Stat(filepath.Join(c.CacheDir, "CACHEDIR.TAG")); err != nil {
		t.Error("no CACHEDIR.TAG")
	}
	// Nothing but blobs and their parts-free names in blobs/.
	for _, p := range listDir(t, filepath.Join(rc.dir, "blobs")) {
		if strings.Contains(p, ".part") || strings.HasPrefix(p, ".") {
			t.Errorf("leftover %s in blobs/", p)
		}
	}

	// The wire: HEAD on the Hub is answered by a 302 that is not followed
	// (no HEAD on the CDN); LFS bytes come from the CDN without the token;
	// every Hub request carries the token; skipped files are never asked.
	if n := srv.CDNAuthViolations(); n != 0 {
		t.Errorf("%d CDN requests carried the token", n)
	}
	for _, r := range srv.Requests() {
		switch {
		case r.Server == "cdn" && r.Method != "GET":
			t.Errorf("%s on the CDN: HEAD must not follow the redirect", r.Method)
		case r.Server == "hub" && !r.Authorization:
			t.Errorf("hub request %s %s without the token", r.Method, r.Path)
		}
		if file := requestedFile(r, commit); file != "" && !PackFilter(file) {
			t.Errorf("request for the skipped file %s: %+v", file, r)
		}
	}
	heads := requests(srv, "hub", "HEAD")
	if len(heads) != len(packNames) {
		t.Errorf("%d HEADs, want one per file", len(heads))
	}
	for _, h := range heads {
		if !strings.Contains(h.Path, "/resolve/"+commit+"/") {
			t.Errorf("HEAD %s is not pinned to the commit", h.Path)
		}
	}
	if n := len(requests(srv, "cdn", "GET")); n != 2 {
		t.Errorf("%d CDN GETs, want 2 (the two shards)", n)
	}
}

// TestSecondSnapshotUsesCache: a second run asks only which commit main is.
// Pinned to the commit, it makes no request at all.
func TestSecondSnapshotUsesCache(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{})
	commit := srv.MustAddRepo(t, hubtest.Repo{ID: "Org/M", Files: modelFiles()})
	c, _ := newClient(t, srv)
	ctx := context.Background()
	if _, err := c.Snapshot(ctx, "Org/M", "main", PackFilter); err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	s, err := c.Snapshot(ctx, "Org/M", "main", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	if r := srv.Requests(); len(r) != 1 || !strings.HasPrefix(r[0].Path, "/api/models/Org/M/revision/main") {
		t.Fatalf("second run made %v, want only the model info call", r)
	}
	if s.Downloaded != 0 || s.BytesDownloaded != 0 {
		t.Fatalf("second run downloaded %d files", s.Downloaded)
	}
	for _, f := range s.Files {
		if !f.Cached || f.SHA256 == "" {
			t.Errorf("%s: cached=%v sha256=%q", f.Path, f.Cached, f.SHA256)
		}
	}
	srv.ResetRequests()
	if _, err := c.Snapshot(ctx, "Org/M", commit, PackFilter); err != nil {
		t.Fatal(err)
	}
	if r := srv.Requests(); len(r) != 0 {
		t.Fatalf("a commit-pinned cached snapshot made requests: %v", r)
	}
}

// TestNewCommitSharesBlobs: a new commit that changes one file downloads
// only that file; unchanged blobs are linked into the new snapshot.
func TestNewCommitSharesBlobs(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{})
	files := modelFiles()
	srv.MustAddRepo(t, hubtest.Repo{ID: "Org/M", Files: files})
	c, _ := newClient(t, srv)
	ctx := context.Background()
	if _, err := c.Snapshot(ctx, "Org/M", "", PackFilter); err != nil {
		t.Fatal(err)
	}
	files[0].Data = []byte(`{"architectures":["Qwen2ForCausalLM"],"hidden_size":128}`)
	second, err := srv.Commit("Org/M", "main", files)
	if err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	s, err := c.Snapshot(ctx, "Org/M", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	if s.Commit != second || s.Downloaded != 1 {
		t.Fatalf("commit %s downloaded %d, want %s and 1", s.Commit, s.Downloaded, second)
	}
	cfg, _ := s.File("config.json")
	mustEqualFile(t, cfg.LocalPath, files[0].Data)
	if n := len(requests(srv, "cdn", "")); n != 0 {
		t.Errorf("%d CDN requests for unchanged weights", n)
	}
	ref, _ := os.ReadFile(filepath.Join(c.repoCache("Org/M").dir, "refs", "main"))
	if string(ref) != second {
		t.Errorf("refs/main = %q, want the new commit", ref)
	}
}

// TestRevisions: tags, commits and refs/pr/N (escaped as one segment in
// URLs, nested in refs/).
func TestRevisions(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{})
	first := srv.MustAddRepo(t, hubtest.Repo{ID: "Org/M", Files: []hubtest.File{{Path: "config.json", Data: []byte("1")}}})
	if err := srv.Tag("Org/M", "v1.0", first); err != nil {
		t.Fatal(err)
	}
	pr, err := srv.Commit("Org/M", "refs/pr/1", []hubtest.File{{Path: "config.json", Data: []byte("pr")}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Commit("Org/M", "main", []hubtest.File{{Path: "config.json", Data: []byte("2")}})
	c, _ := newClient(t, srv)
	ctx := context.Background()
	for _, tc := range []struct{ rev, commit, data string }{{"v1.0", first, "1"}, {"refs/pr/1", pr, "pr"}, {first, first, "1"}} {
		s, err := c.Snapshot(ctx, "Org/M", tc.rev, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.rev, err)
		}
		f, _ := s.File("config.json")
		if s.Commit != tc.commit {
			t.Errorf("%s resolved to %s, want %s", tc.rev, s.Commit, tc.commit)
		}
		mustEqualFile(t, f.LocalPath, []byte(tc.data))
	}
	ref, err := os.ReadFile(filepath.Join(c.repoCache("Org/M").dir, "refs", "refs", "pr", "1"))
	if err != nil || string(ref) != pr {
		t.Errorf("refs/refs/pr/1 = %q (%v)", ref, err)
	}
	if _, err := os.Stat(filepath.Join(c.repoCache("Org/M").dir, "refs", first)); err == nil {
		t.Error("a ref file was written for a commit hash")
	}
	found := false
	for _, r := range srv.Requests() {
		found = found || strings.Contains(r.Path, "/revision/refs%2Fpr%2F1")
	}
	if !found {
		t.Error("refs/pr/1 was not sent as one escaped segment")
	}
}

// TestRenamedRepo: the Hub answers a renamed repo's old id with relative
// redirects, which are followed for the API and for HEAD.
func TestRenamedRepo(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{})
	_, data := oneFileRepo(t, srv, "Old/Name", 50<<10)
	if err := srv.Rename("Old/Name", "New/Name"); err != nil {
		t.Fatal(err)
	}
	c, _ := newClient(t, srv)
	s, err := c.Snapshot(context.Background(), "Old/Name", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.File("model.safetensors")
	mustEqualFile(t, f.LocalPath, data)
	redirects := 0
	for _, r := range srv.Requests() {
		if r.Status == 307 {
			redirects++
		}
	}
	if redirects < 3 { // model info + two HEADs
		t.Errorf("%d relative redirects followed, want at least 3", redirects)
	}
}

// TestResolveCacheHop: small files behind huggingface.co's relative hop to
// /api/resolve-cache/…, whose final 200 carries the metadata.
func TestResolveCacheHop(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{ResolveCacheHop: true})
	files := modelFiles()
	srv.MustAddRepo(t, hubtest.Repo{ID: "Org/M", Files: files})
	c, _ := newClient(t, srv)
	s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.File("tokenizer.json")
	mustEqualFile(t, f.LocalPath, files[2].Data)
	hops := 0
	for _, r := range srv.Requests() {
		if strings.HasPrefix(r.Path, "/api/resolve-cache/") {
			hops++
		}
	}
	if hops == 0 {
		t.Error("the resolve-cache hop was never used")
	}
}

// TestMirrorWithoutBlobs: a server that ignores blobs=true is listed
// through the paginated tree endpoint.
func TestMirrorWithoutBlobs(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{NoBlobsMetadata: true, TreePageSize: 3})
	files := modelFiles()
	srv.MustAddRepo(t, hubtest.Repo{ID: "Org/M", Files: files})
	c, _ := newClient(t, srv)
	all, err := c.ListFiles(context.Background(), "Org/M", "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(files) {
		t.Fatalf("listed %d files, want %d", len(all), len(files))
	}
	pages := 0
	for _, r := range srv.Requests() {
		if strings.Contains(r.Path, "/tree/") {
			pages++
		}
	}
	if pages < len(files)/3 {
		t.Errorf("%d tree pages fetched; the listing has %d entries in pages of 3", pages, len(files))
	}
	s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	if err != nil || len(s.Files) != len(packNames) {
		t.Fatalf("snapshot through the tree listing: %v", err)
	}
}

// TestListFilesAndRefs: what `anepack ls` shows.
func TestListFilesAndRefs(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{})
	files := modelFiles()
	commit := srv.MustAddRepo(t, hubtest.Repo{ID: "Org/M", Files: files})
	c, _ := newClient(t, srv)
	list, err := c.ListFiles(context.Background(), "Org/M", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range list {
		b, ok := srv.Blob("Org/M", "main", f.Path)
		if !ok || f.Size != b.Size || f.LFS != b.LFS || (f.LFS && f.SHA256 != b.SHA256) || f.etag() != b.Etag {
			t.Errorf("%s: listed %+v, served %+v", f.Path, f, b)
		}
	}
	refs, err := c.ListRefs(context.Background(), "Org/M")
	if err != nil || len(refs) != 1 || refs[0].Name != "main" || refs[0].Commit != commit {
		t.Fatalf("refs %+v %v", refs, err)
	}
	if len(listDir(t, c.CacheDir)) != 0 {
		t.Error("listing wrote to the cache")
	}
}

// TestParallelChunks: a file larger than ChunkSize is fetched as ranged
// chunks on several connections and reassembled exactly.
func TestParallelChunks(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{})
	_, data := oneFileRepo(t, srv, "Org/M", 1<<20+12345)
	c, _ := newClient(t, srv)
	c.ChunkSize, c.Jobs = 128<<10, 4
	s, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.File("model.safetensors")
	mustEqualFile(t, f.LocalPath, data)
	gets := requests(srv, "cdn", "GET")
	if len(gets) != 9 {
		t.Fatalf("%d ranged GETs, want 9 chunks", len(gets))
	}
	seen := map[string]bool{}
	for _, g := range gets {
		if g.Status != 206 || g.Range == "" || seen[g.Range] {
			t.Errorf("chunk request %+v", g)
		}
		seen[g.Range] = true
	}
	if _, err := os.Stat(c.repoCache("Org/M").partPath(f.SHA256) + ".json"); !os.IsNotExist(err) {
		t.Error("the chunk state file was left behind")
	}
}

// TestJobsLimit: --jobs bounds the transfers in flight.
func TestJobsLimit(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{})
	var files []hubtest.File
	var stalls []hubtest.StallFault
	// Each transfer pauses long enough for the others to start, even on a
	// loaded machine.
	for i := 0; i < 4; i++ {
		name := "model-0000" + string(rune('1'+i)) + "-of-00004.safetensors"
		files = append(files, hubtest.File{Path: name, Data: randBytes(uint64(i), 64<<10)})
		stalls = append(stalls, hubtest.StallFault{File: name, At: 1000, For: 250 * time.Millisecond})
	}
	srv.MustAddRepo(t, hubtest.Repo{ID: "Org/M", Files: files})
	srv.SetFaults(hubtest.Faults{Stall: stalls})
	for _, jobs := range []int{1, 3} {
		c, _ := newClient(t, srv)
		c.Jobs = jobs
		srv.ResetRequests()
		if _, err := c.Snapshot(context.Background(), "Org/M", "", nil); err != nil {
			t.Fatal(err)
		}
		if got := srv.MaxInFlight(); got != jobs {
			t.Errorf("jobs=%d: %d transfers at once", jobs, got)
		}
	}
}

// TestDownloadFile fetches one file and reports a missing one.
func TestDownloadFile(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{})
	files := modelFiles()
	srv.MustAddRepo(t, hubtest.Repo{ID: "Org/M", Files: files})
	c, _ := newClient(t, srv)
	f, err := c.DownloadFile(context.Background(), "Org/M", "", "onnx/model.onnx")
	if err != nil {
		t.Fatal(err)
	}
	mustEqualFile(t, f.LocalPath, files[12].Data)
	if target, _ := os.Readlink(f.LocalPath); !strings.HasPrefix(target, "../../../blobs/") {
		t.Errorf("nested file links to %q, want ../../../blobs/…", target)
	}
	_, err = c.DownloadFile(context.Background(), "Org/M", "", "nope.json")
	wantKind(t, err, ErrEntryNotFound, "nope.json", "Org/M")
}

// TestEmptyFile: a zero-byte file is verified (its hash is of nothing) and linked.
func TestEmptyFile(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{})
	srv.MustAddRepo(t, hubtest.Repo{ID: "Org/M", Files: []hubtest.File{{Path: "special_tokens_map.json", Data: nil}}})
	c, _ := newClient(t, srv)
	s, err := c.Snapshot(context.Background(), "Org/M", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.File("special_tokens_map.json")
	mustEqualFile(t, f.LocalPath, nil)
	if f.SHA256 != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("sha256 of an empty file: %s", f.SHA256)
	}
}

// requestedFile is the repo file a request is about: the path after
// /resolve/<commit>/ on the Hub, the file= parameter on the CDN.
func requestedFile(r hubtest.Request, commit string) string {
	if r.Server == "cdn" {
		q, _ := url.ParseQuery(r.Query)
		return q.Get("file")
	}
	if _, file, ok := strings.Cut(r.Path, "/resolve/"+commit+"/"); ok {
		return file
	}
	return ""
}
