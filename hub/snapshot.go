package hub

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/anepack/anepack/internal/fileutil"
)

// Snapshot is a repo at one commit, present in the cache.
type Snapshot struct {
	Repo     string
	Revision string // as asked
	Commit   string // the 40-hex commit it resolved to
	// Dir is the snapshot folder (…/snapshots/<commit>): the wanted files
	// are there under their repo paths.
	Dir string
	// Files are the wanted files, sorted by path, with LocalPath and SHA256
	// filled in.
	Files []FileInfo
	// Downloaded counts the files fetched by this call; the others were
	// cached. BytesDownloaded counts the bytes received by this call.
	Downloaded      int
	BytesDownloaded int64
}

// File returns the wanted file with the given repo path.
func (s *Snapshot) File(path string) (FileInfo, bool) {
	i := sort.Search(len(s.Files), func(i int) bool { return s.Files[i].Path >= path })
	if i < len(s.Files) && s.Files[i].Path == path {
		return s.Files[i], true
	}
	return FileInfo{}, false
}

// Snapshot makes the files of repo at revision that want accepts (all
// files if want is nil) present and verified in the cache, downloading
// what is missing, and returns where they are. revision defaults to
// "main". A commit-hash revision whose files are all cached is answered
// without any request; in Offline mode no request is ever made and a
// missing file is an ErrNotCached error that names it. If the Hub cannot be
// reached at all, a cached snapshot of the revision is used, as
// huggingface_hub does.
func (c *Client) Snapshot(ctx context.Context, repo, revision string, want func(path string) bool) (*Snapshot, error) {
	s, err := c.snapshot(ctx, repo, revision, want)
	return s, redact(err, c.Token)
}

func (c *Client) snapshot(ctx context.Context, repo, revision string, want func(string) bool) (*Snapshot, error) {
	revision, err := c.prepare(repo, revision)
	if err != nil {
		return nil, err
	}
	if want == nil {
		want = func(string) bool { return true }
	}
	if c.Offline {
		return c.fromCache(repo, revision, want, false)
	}
	if isCommitHash(revision) {
		// A commit never changes: with its listing cached and every wanted
		// file present, there is nothing to ask.
		if s, err := c.fromCache(repo, revision, want, true); err == nil {
			return s, nil
		}
	}
	info, err := c.resolve(ctx, repo, revision)
	if err != nil {
		if errors.Is(err, ErrNetwork) {
			if s, cerr := c.fromCache(repo, revision, want, false); cerr == nil {
				c.logf("%v; using the cached snapshot %s", err, s.Commit)
				return s, nil
			}
		}
		return nil, err
	}
	rc := c.repoCache(repo)
	if err := rc.writeTree(info.Commit, info.Files); err != nil {
		return nil, err
	}
	ensureCacheTag(c.CacheDir)
	if revision != info.Commit {
		if err := rc.writeRef(revision, info.Commit); err != nil {
			return nil, err
		}
	}
	return c.fetchFiles(ctx, rc, repo, revision, info, want)
}

// blobJob is one blob to download and the wanted files that share it.
type blobJob struct {
	file  FileInfo // the first file with this content
	paths []int    // indices into the snapshot's Files
	sums  hashes
}

// fetchFiles downloads the missing wanted files, Jobs at a time.
func (c *Client) fetchFiles(ctx context.Context, rc repoCache, repo, revision string, info *RepoInfo, want func(string) bool) (*Snapshot, error) {
	s := &Snapshot{Repo: repo, Revision: revision, Commit: info.Commit, Dir: rc.snapshotDir(info.Commit)}
	byEtag := map[string]*blobJob{}
	var jobs []*blobJob
	var need, total int64
	for _, f := range info.Files {
		if !want(f.Path) {
			continue
		}
		i := len(s.Files)
		f.LocalPath = rc.snapshotFile(info.Commit, f.Path)
		s.Files = append(s.Files, f)
		if fileSize(f.LocalPath) == f.Size {
			s.Files[i].Cached = true
			continue
		}
		etag := f.etag()
		if fileSize(rc.blobPath(etag)) == f.Size {
			// Same content cached under another path or commit.
			if err := rc.linkSnapshot(info.Commit, f.Path, etag); err != nil {
				return nil, diskErr(err, f.LocalPath)
			}
			s.Files[i].Cached = true
			continue
		}
		if j := byEtag[etag]; j != nil {
			j.paths = append(j.paths, i)
			continue
		}
		j := &blobJob{file: f, paths: []int{i}}
		byEtag[etag] = j
		jobs = append(jobs, j)
		total += f.Size
		need += f.Size - partialBytes(rc.partPath(etag), f.Size)
	}
	if len(jobs) > 0 {
		if err := os.MkdirAll(filepath.Join(rc.dir, "blobs"), 0o755); err != nil {
			return nil, diskErr(err, rc.dir)
		}
		if free, ok := c.statFree(rc.dir); ok && free < need {
			return nil, &Error{Kind: ErrDiskFull, Repo: repo,
				Msg: fmt.Sprintf("not enough disk space for %s: %s to download, %s free in %s; free some space or set HF_HUB_CACHE to a folder on a larger disk",
					repo, formatSize(need), formatSize(free), c.CacheDir)}
		}
	}
	// Largest first, so the long transfer starts early and small files
	// fill the other streams.
	sort.SliceStable(jobs, func(i, j int) bool { return jobs[i].file.Size > jobs[j].file.Size })
	tr := &tracker{p: c.Progress}
	if c.Progress != nil {
		c.Progress.Start(len(jobs), total)
		defer c.Progress.Finish()
	}
	if err := c.runJobs(ctx, rc, info.Commit, repo, jobs, s, tr); err != nil {
		return nil, err
	}
	s.BytesDownloaded = tr.bytes.Load()
	for _, j := range jobs {
		for _, i := range j.paths {
			if !s.Files[i].LFS {
				s.Files[i].SHA256 = j.sums.sha256
			}
		}
	}
	for i := range s.Files {
		if s.Files[i].SHA256 == "" {
			sum, _, err := fileutil.SHA256File(ctx, s.Files[i].LocalPath, nil)
			if err != nil {
				return nil, fmt.Errorf("hub: hashing the cached %s: %w", s.Files[i].LocalPath, err)
			}
			s.Files[i].SHA256 = sum
		}
	}
	return s, nil
}

// runJobs downloads blobs with up to Jobs files in flight; the first failure
// cancels the rest (their .part files stay for the next run).
func (c *Client) runJobs(ctx context.Context, rc repoCache, commit, repo string, jobs []*blobJob, s *Snapshot, tr *tracker) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan *blobJob, len(jobs))
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range min(c.Jobs, len(jobs)) {
		wg.Go(func() {
			for j := range queue {
				if ctx.Err() != nil {
					return
				}
				err := c.fetchBlob(ctx, rc, repo, commit, j, tr)
				for _, i := range j.paths {
					if err == nil {
						err = diskErr(rc.linkSnapshot(commit, s.Files[i].Path, j.file.etag()), s.Files[i].LocalPath)
					}
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				} else if err == nil {
					s.Downloaded += len(j.paths)
				}
				mu.Unlock()
				if err != nil {
					return
				}
				tr.fileDone(j.file.Path, j.file.Size)
			}
		})
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return firstErr
}

// fetchBlob downloads and verifies one blob into blobs/<etag>, holding the
// cross-process lock.
func (c *Client) fetchBlob(ctx context.Context, rc repoCache, repo, commit string, j *blobJob, tr *tracker) error {
	f := j.file
	etag := f.etag()
	unlock, err := fileutil.Lock(ctx, rc.lockPath(etag), func() {
		c.logf("%s: another process is downloading it; waiting", f.Path)
	})
	if err != nil {
		return diskErr(err, rc.lockPath(etag))
	}
	defer unlock()
	blob := rc.blobPath(etag)
	if fileSize(blob) == f.Size {
		// The other process finished it.
		tr.add(f.Size)
		if f.LFS {
			j.sums.sha256 = f.SHA256
		} else if j.sums.sha256, _, err = fileutil.SHA256File(ctx, blob, nil); err != nil {
			return err
		}
		return nil
	}
	meta, err := c.headFile(ctx, repo, commit, f.Path)
	if err != nil {
		return err
	}
	if err := checkMeta(meta, f, repo, commit); err != nil {
		return err
	}
	what := reqDesc{repo: repo, rev: commit, file: f.Path, kind: "download of"}
	src := &cdnSource{c: c, what: what, size: f.Size, u: meta.location, refresh: func(ctx context.Context) (*url.URL, error) {
		m, err := c.headFile(ctx, repo, commit, f.Path)
		if err != nil {
			return nil, err
		}
		return m.location, nil
	}}
	part := rc.partPath(etag)
	for attempt := 0; ; attempt++ {
		sums, err := c.download(ctx, src, f, part, tr)
		if err != nil {
			return err
		}
		got, kind := sums.sha256, "sha256"
		if !f.LFS {
			got, kind = sums.gitSHA1, "git blob SHA-1"
		}
		if got == etag && fileSize(part) == f.Size {
			if err := os.Rename(part, blob); err != nil {
				return diskErr(err, blob)
			}
			os.Remove(part + ".json")
			fileutil.SyncDir(filepath.Dir(blob))
			j.sums = sums
			return nil
		}
		discardPart(part)
		tr.add(-f.Size)
		if attempt >= c.ChecksumRetries {
			return &Error{Kind: ErrChecksum, Repo: repo, Revision: commit, File: f.Path,
				Msg: fmt.Sprintf("%s of %s in %s does not match the Hub's (expected %s, got %s) after %d downloads; the corrupt file was removed. Try again later; if it keeps happening the mirror or proxy in between (HF_ENDPOINT=%s) is damaging data",
					kind, f.Path, repo, etag, got, attempt+1, c.Endpoint)}
		}
		c.logf("%s: %s mismatch (expected %s, got %s); removed it and downloading again", f.Path, kind, etag, got)
	}
}

// discardPart removes a download's part file and its progress record.
func discardPart(part string) {
	os.Remove(part)
	os.Remove(part + ".json")
}

// checkMeta cross-checks the HEAD answer with the listing.
func checkMeta(m *fileMeta, f FileInfo, repo, commit string) error {
	bad := func(format string, args ...any) error {
		return &Error{Kind: ErrProtocol, Repo: repo, Revision: commit, File: f.Path,
			Msg: fmt.Sprintf("metadata of %s in %s: ", f.Path, repo) + fmt.Sprintf(format, args...)}
	}
	if m.commit != commit {
		return bad("X-Repo-Commit is %s, but %s was asked for", m.commit, commit)
	}
	if (len(m.etag) == 40 || len(m.etag) == 64) && isLowerHex(m.etag) && m.etag != f.etag() {
		return bad("the ETag %s does not match the listing's %s", m.etag, f.etag())
	}
	if m.size >= 0 && m.size != f.Size {
		return bad("the size %d does not match the listing's %d", m.size, f.Size)
	}
	return nil
}

// fromCache answers from the cache alone. With needTree, only a cache that
// has the commit's full listing (trees/<commit>.json) qualifies, so that a
// missing file cannot go unnoticed.
func (c *Client) fromCache(repo, revision string, want func(string) bool, needTree bool) (*Snapshot, error) {
	commit, files, err := c.cachedListing(repo, revision)
	if err != nil {
		return nil, err
	}
	rc := c.repoCache(repo)
	if _, ok := rc.readTree(commit); needTree && !ok {
		return nil, &Error{Kind: ErrNotCached, Repo: repo, Revision: revision, Msg: "no cached listing"}
	}
	s := &Snapshot{Repo: repo, Revision: revision, Commit: commit, Dir: rc.snapshotDir(commit)}
	var missing []string
	for _, f := range files {
		if !want(f.Path) {
			continue
		}
		f.LocalPath = rc.snapshotFile(commit, f.Path)
		size := fileSize(f.LocalPath)
		if size < 0 || (f.Size >= 0 && size != f.Size) {
			missing = append(missing, f.Path)
			continue
		}
		f.Size, f.Cached = size, true
		if !f.LFS || f.SHA256 == "" {
			if f.SHA256, _, err = fileutil.SHA256File(context.Background(), f.LocalPath, nil); err != nil {
				return nil, fmt.Errorf("hub: hashing the cached %s: %w", f.LocalPath, err)
			}
		}
		s.Files = append(s.Files, f)
	}
	if len(missing) > 0 {
		names := strings.Join(missing[:min(len(missing), 5)], ", ")
		if len(missing) > 5 {
			names += fmt.Sprintf(" and %d more", len(missing)-5)
		}
		return nil, &Error{Kind: ErrNotCached, Repo: repo, Revision: revision, File: missing[0],
			Msg: fmt.Sprintf("offline mode (HF_HUB_OFFLINE): missing from the cache: %s of %s at %s (in %s); run once without HF_HUB_OFFLINE to download it",
				names, repo, commit, s.Dir)}
	}
	return s, nil
}

// cachedListing finds revision's commit and file list in the cache: the
// trees/<commit>.json listing if present, else whatever the snapshot folder
// holds (a cache written by an older huggingface_hub).
func (c *Client) cachedListing(repo, revision string) (string, []FileInfo, error) {
	if revision == "" {
		revision = "main"
	}
	if err := checkRepoID(repo); err != nil {
		return "", nil, err
	}
	if err := checkRevision(revision); err != nil {
		return "", nil, err
	}
	rc := c.repoCache(repo)
	commit := revision
	if !isCommitHash(revision) {
		var ok bool
		if commit, ok = rc.readRef(revision); !ok {
			return "", nil, &Error{Kind: ErrNotCached, Repo: repo, Revision: revision,
				Msg: fmt.Sprintf("offline mode (HF_HUB_OFFLINE): revision %q of %s is not in the cache %s (no %s); run once without HF_HUB_OFFLINE to download it",
					revision, repo, c.CacheDir, rc.refPath(revision))}
		}
	}
	if st, err := os.Stat(rc.snapshotDir(commit)); err != nil || !st.IsDir() {
		return "", nil, &Error{Kind: ErrNotCached, Repo: repo, Revision: revision,
			Msg: fmt.Sprintf("offline mode (HF_HUB_OFFLINE): %s at %s is not in the cache (no %s); run once without HF_HUB_OFFLINE to download it",
				repo, commit, rc.snapshotDir(commit))}
	}
	if files, ok := rc.readTree(commit); ok {
		return commit, files, nil
	}
	files, err := rc.scanSnapshot(commit)
	if err != nil {
		return "", nil, fmt.Errorf("hub: reading the cached snapshot %s: %w", rc.snapshotDir(commit), err)
	}
	return commit, files, nil
}

// fileSize is the size of the regular file at p (following symlinks), or -1.
func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() {
		return -1
	}
	return st.Size()
}

// partialBytes guesses how much of a download is already in its .part file,
// for the free-space check: a contiguous .part counts, a sparse parallel
// one (with a .json state) conservatively does not.
func partialBytes(part string, size int64) int64 {
	if _, err := os.Stat(part + ".json"); err == nil {
		return 0
	}
	return min(max(fileSize(part), 0), size)
}

// DownloadFile makes one file of repo at revision present in the cache and
// returns it (LocalPath is where it is). A file the revision does not have
// is an ErrEntryNotFound error.
func (c *Client) DownloadFile(ctx context.Context, repo, revision, path string) (FileInfo, error) {
	s, err := c.snapshot(ctx, repo, revision, func(p string) bool { return p == path })
	if err != nil {
		return FileInfo{}, redact(err, c.Token)
	}
	if f, ok := s.File(path); ok {
		return f, nil
	}
	return FileInfo{}, &Error{Kind: ErrEntryNotFound, Repo: repo, Revision: s.Revision, File: path,
		Msg: fmt.Sprintf("file %s not found in %s at revision %s (commit %s)", path, repo, s.Revision, s.Commit)}
}
