package hub

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anepack/anepack/hub/hubtest"
)

// writeHFCache lays out files the way huggingface-cli / hf download does:
// blobs named by etag, relative symlinks in snapshots/<commit>/, refs/main
// holding the commit (ref is written as given, to test stray newlines). No
// trees/<commit>.json, as older huggingface_hub versions wrote none.
func writeHFCache(t *testing.T, srv *hubtest.Server, cache, repo, commit string, files []hubtest.File, ref string, symlinks bool) {
	t.Helper()
	dir := filepath.Join(cache, "models--"+strings.ReplaceAll(repo, "/", "--"))
	for _, f := range files {
		b, _ := srv.Blob(repo, commit, f.Path)
		blob := filepath.Join(dir, "blobs", b.Etag)
		os.MkdirAll(filepath.Dir(blob), 0o755)
		if err := os.WriteFile(blob, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, "snapshots", commit, filepath.FromSlash(f.Path))
		os.MkdirAll(filepath.Dir(link), 0o755)
		if symlinks {
			rel, _ := filepath.Rel(filepath.Dir(link), blob)
			if err := os.Symlink(rel, link); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(link, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(dir, "refs"), 0o755)
	os.WriteFile(filepath.Join(dir, "refs", "main"), []byte(ref), 0o644)
}

// TestHFCacheInterop: a cache written by huggingface-cli is reused: offline
// with no request at all, online with one metadata call and no download,
// pinned to the commit with no request once the listing is cached.
func TestHFCacheInterop(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{})
	files := modelFiles()
	commit := srv.MustAddRepo(t, hubtest.Repo{ID: "Qwen/Tiny", Files: files})
	var packOnly []hubtest.File
	for _, f := range files {
		if PackFilter(f.Path) {
			packOnly = append(packOnly, f)
		}
	}
	for _, tc := range []struct {
		name     string
		ref      string
		symlinks bool
	}{{"symlinks", commit, true}, {"ref-with-newline", commit + "\n", true}, {"no-symlink-mode", commit, false}} {
		t.Run(tc.name, func(t *testing.T) {
			cache := t.TempDir()
			writeHFCache(t, srv, cache, "Qwen/Tiny", commit, packOnly, tc.ref, tc.symlinks)
			check := func(s *Snapshot) {
				t.Helper()
				if s.Commit != commit || len(s.Files) != len(packNames) || s.Downloaded != 0 {
					t.Fatalf("snapshot %s with %d files, %d downloaded", s.Commit, len(s.Files), s.Downloaded)
				}
				for _, f := range s.Files {
					b, _ := srv.Blob("Qwen/Tiny", commit, f.Path)
					if f.SHA256 != b.SHA256 || f.Size != b.Size || !f.Cached {
						t.Errorf("%s: %+v, served %+v", f.Path, f, b)
					}
				}
			}

			srv.ResetRequests()
			off, _ := newClient(t, srv)
			off.CacheDir, off.Offline = cache, true
			s, err := off.Snapshot(context.Background(), "Qwen/Tiny", "main", PackFilter)
			if err != nil {
				t.Fatal(err)
			}
			check(s)
			if r := srv.Requests(); len(r) != 0 {
				t.Fatalf("offline made requests: %v", r)
			}

			on, _ := newClient(t, srv)
			on.CacheDir = cache
			if s, err = on.Snapshot(context.Background(), "Qwen/Tiny", "main", PackFilter); err != nil {
				t.Fatal(err)
			}
			check(s)
			if r := srv.Requests(); len(r) != 1 || !strings.Contains(r[0].Path, "/api/models/Qwen/Tiny/revision/main") {
				t.Fatalf("online reuse made %v; want only the model info call", r)
			}
			srv.ResetRequests()
			if s, err = on.Snapshot(context.Background(), "Qwen/Tiny", commit, PackFilter); err != nil {
				t.Fatal(err)
			}
			check(s)
			if r := srv.Requests(); len(r) != 0 {
				t.Fatalf("a commit-pinned reuse made requests: %v", r)
			}
		})
	}
}

// TestOffline: offline mode never touches the network and names what is
// missing.
func TestOffline(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{})
	files := modelFiles()
	commit := srv.MustAddRepo(t, hubtest.Repo{ID: "Org/M", Files: files})
	c, _ := newClient(t, srv)
	c.Offline = true
	ctx := context.Background()

	_, err := c.Snapshot(ctx, "Org/M", "", PackFilter)
	wantKind(t, err, ErrNotCached, "offline", "HF_HUB_OFFLINE", `"main"`, filepath.Join("refs", "main"))
	_, err = c.ListFiles(ctx, "Org/M", commit)
	wantKind(t, err, ErrNotCached, commit)

	on, _ := newClient(t, srv)
	on.CacheDir = c.CacheDir
	if _, err := on.Snapshot(ctx, "Org/M", "", PackFilter); err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	s, err := c.Snapshot(ctx, "Org/M", "", PackFilter)
	if err != nil || len(s.Files) != len(packNames) {
		t.Fatalf("offline after a download: %v", err)
	}
	list, err := c.ListFiles(ctx, "Org/M", "main")
	if err != nil || len(list) != len(files) {
		t.Fatalf("offline listing: %d files, %v", len(list), err)
	}
	// A file the listing has but the cache lacks (here: never wanted) is
	// named, thanks to trees/<commit>.json.
	_, err = c.Snapshot(ctx, "Org/M", "", nil)
	wantKind(t, err, ErrNotCached, "README.md", "missing from the cache", "without HF_HUB_OFFLINE")
	// So is a wanted file whose blob was deleted.
	b, _ := srv.Blob("Org/M", commit, "model-00002-of-00002.safetensors")
	os.Remove(c.repoCache("Org/M").blobPath(b.Etag))
	_, err = c.Snapshot(ctx, "Org/M", "", PackFilter)
	wantKind(t, err, ErrNotCached, "model-00002-of-00002.safetensors")
	if r := srv.Requests(); len(r) != 0 {
		t.Fatalf("offline made requests: %v", r)
	}
	// Online, the deleted blob is fetched again.
	if _, err := on.Snapshot(ctx, "Org/M", "", PackFilter); err != nil {
		t.Fatal(err)
	}
	if n := len(requests(srv, "cdn", "GET")); n != 1 {
		t.Errorf("%d downloads to repair one missing blob", n)
	}
}

// TestUnreachableFallsBackToCache: with the Hub gone, a cached snapshot of
// the revision is used, as huggingface_hub does.
func TestUnreachableFallsBackToCache(t *testing.T) {
	srv := hubtest.Start(hubtest.Options{})
	oneFileRepo(t, srv, "Org/M", 10<<10)
	c, log := newClient(t, srv)
	if _, err := c.Snapshot(context.Background(), "Org/M", "", PackFilter); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	c2, log2 := newClient(t, srv)
	c2.CacheDir = c.CacheDir
	s, err := c2.Snapshot(context.Background(), "Org/M", "", PackFilter)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Files) != 2 || !strings.Contains(log2.String(), "using the cached snapshot") {
		t.Errorf("fallback: %d files; log: %s %s", len(s.Files), log, log2)
	}
}

// TestTokenNeverLeaks: the token appears in no cache file, file name, log
// line or error, and is sent to the Hub only.
func TestTokenNeverLeaks(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{Tokens: []string{testToken}})
	files := modelFiles()
	srv.MustAddRepo(t, hubtest.Repo{ID: "Org/M", Files: files, Private: true})
	srv.MustAddRepo(t, hubtest.Repo{ID: "Org/Gated", Files: files, Gated: true})
	c, log := newClient(t, srv)
	c.Token, c.TokenSource = testToken, "HF_TOKEN"
	c.ChunkSize = 64 << 10
	ctx := context.Background()
	if _, err := c.Snapshot(ctx, "Org/M", "", nil); err != nil {
		t.Fatal(err)
	}
	var errs []error
	_, err := c.Snapshot(ctx, "Org/Gated", "", PackFilter)
	errs = append(errs, err)
	_, err = c.Snapshot(ctx, "Org/M", "nope", PackFilter)
	errs = append(errs, err)
	_, err = c.DownloadFile(ctx, "Org/M", "", "nope")
	errs = append(errs, err)
	srv.SetFaults(hubtest.Faults{Corrupt: []hubtest.CorruptFault{{At: 3}}})
	c2, log2 := newClient(t, srv)
	c2.Token = testToken
	_, err = c2.Snapshot(ctx, "Org/M", "", PackFilter)
	errs = append(errs, err)
	for _, err := range errs {
		if err == nil {
			t.Fatal("expected an error")
		}
		if strings.Contains(err.Error(), testToken) {
			t.Errorf("token in error: %v", err)
		}
	}
	// An error carrying the token in its text (from any layer) is redacted.
	leaky := redact(&Error{Kind: ErrServer, Msg: "server echoed Bearer " + testToken}, testToken)
	if strings.Contains(leaky.Error(), testToken) || !strings.Contains(leaky.Error(), "hf_***") {
		t.Errorf("redact: %v", leaky)
	}
	for _, l := range []*logBuf{log, log2} {
		if strings.Contains(l.String(), testToken) {
			t.Error("token in the log")
		}
	}
	filepath.WalkDir(c.CacheDir, func(p string, d os.DirEntry, err error) error {
		if strings.Contains(p, testToken) {
			t.Errorf("token in a path: %s", p)
		}
		if target, err := os.Readlink(p); err == nil && strings.Contains(target, testToken) {
			t.Errorf("token in a link: %s", p)
		}
		if d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			if bytes.Contains(data, []byte(testToken)) {
				t.Errorf("token in %s", p)
			}
		}
		return nil
	})
	if srv.CDNAuthViolations() != 0 {
		t.Error("the token was sent to the CDN")
	}
}
