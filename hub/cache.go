package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/anepack/anepack/internal/fileutil"
)

// repoCache is one repo's folder in the Hugging Face cache.
type repoCache struct {
	root string // $HF_HUB_CACHE
	dir  string // root/models--Org--Name
	name string // models--Org--Name
}

func (c *Client) repoCache(repo string) repoCache {
	name := repoFolderName(repo)
	return repoCache{root: c.CacheDir, dir: filepath.Join(c.CacheDir, name), name: name}
}

func (rc repoCache) blobPath(etag string) string { return filepath.Join(rc.dir, "blobs", etag) }
func (rc repoCache) partPath(etag string) string { return rc.blobPath(etag) + ".part" }
func (rc repoCache) lockPath(etag string) string {
	return filepath.Join(rc.root, ".locks", rc.name, etag+".lock")
}
func (rc repoCache) snapshotDir(commit string) string {
	return filepath.Join(rc.dir, "snapshots", commit)
}
func (rc repoCache) snapshotFile(commit, file string) string {
	return filepath.Join(rc.snapshotDir(commit), filepath.FromSlash(file))
}
func (rc repoCache) refPath(rev string) string {
	return filepath.Join(rc.dir, "refs", filepath.FromSlash(rev))
}
func (rc repoCache) treePath(commit string) string {
	return filepath.Join(rc.dir, "trees", commit+".json")
}

// readRef returns the commit a cached ref points to. huggingface_hub writes
// it without a newline; other tools may add one, so whitespace is trimmed.
func (rc repoCache) readRef(rev string) (string, bool) {
	data, err := os.ReadFile(rc.refPath(rev))
	if err != nil {
		return "", false
	}
	commit := strings.TrimSpace(string(data))
	return commit, isCommitHash(commit)
}

// writeRef records rev -> commit, without a trailing newline (Python reads
// the file raw and would otherwise look for "snapshots/<commit>\n").
func (rc repoCache) writeRef(rev, commit string) error {
	if old, ok := rc.readRef(rev); ok && old == commit {
		return nil
	}
	p := rc.refPath(rev)
	return diskErr(fileutil.WriteFileAtomic(p, "", []byte(commit)), p)
}

// treeFile is huggingface_hub's trees/<commit>.json (_tree_cache.py).
type treeFile struct {
	FormatVersion int                  `json:"format_version"`
	Files         map[string]treeEntry `json:"files"`
}

type treeEntry struct {
	Size      int64  `json:"size"`
	BlobID    string `json:"blob_id"`
	LFSSHA256 string `json:"lfs_sha256,omitempty"`
	LFSSize   *int64 `json:"lfs_size,omitempty"`
	XetHash   string `json:"xet_hash,omitempty"`
}

// writeTree caches the full listing of an (immutable) commit. Python uses it
// to skip per-file requests and to detect incomplete snapshots offline.
//
// It is written entry by entry: marshalling a map of a huge listing at once
// cost several times the listing's size. files are sorted by path, which is
// also the order json gives a map's keys, so the file reads back the same.
func (rc repoCache) writeTree(commit string, files []FileInfo) error {
	p := rc.treePath(commit)
	return diskErr(fileutil.WriteAtomic(p, "", func(w *bufio.Writer) error {
		w.WriteString("{\n \"format_version\": 1,\n \"files\": {")
		for i, f := range files {
			e := treeEntry{Size: f.Size, BlobID: f.BlobID}
			if f.LFS {
				size := f.Size
				e.LFSSHA256, e.LFSSize = f.SHA256, &size
			}
			key, err := json.Marshal(f.Path)
			if err != nil {
				return err
			}
			val, err := json.Marshal(e)
			if err != nil {
				return err
			}
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString("\n  ")
			w.Write(key)
			w.WriteString(": ")
			w.Write(val)
		}
		_, err := w.WriteString("\n }\n}\n")
		return err
	}), p)
}

// readTree loads trees/<commit>.json; ok is false when it is absent, of
// another format version, or unsafe.
func (rc repoCache) readTree(commit string) ([]FileInfo, bool) {
	data, err := os.ReadFile(rc.treePath(commit))
	if err != nil {
		return nil, false
	}
	var t treeFile
	if json.Unmarshal(data, &t) != nil || t.FormatVersion != 1 {
		return nil, false
	}
	files := make([]FileInfo, 0, len(t.Files))
	for p, e := range t.Files {
		f := FileInfo{Path: p, Size: e.Size, BlobID: e.BlobID}
		if e.LFSSHA256 != "" {
			f.LFS, f.SHA256 = true, e.LFSSHA256
			if e.LFSSize != nil {
				f.Size = *e.LFSSize
			}
		}
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	if checkListing(files) != nil {
		return nil, false
	}
	return files, true
}

// scanSnapshot lists a snapshot folder written by any tool (symlinks into
// blobs/, or plain files in no-symlink mode), for caches without a trees file.
func (rc repoCache) scanSnapshot(commit string) ([]FileInfo, error) {
	dir := rc.snapshotDir(commit)
	var files []FileInfo
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		f := FileInfo{Path: filepath.ToSlash(rel), Size: -1}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			f.Size = st.Size()
		}
		if target, err := os.Readlink(p); err == nil {
			name := filepath.Base(target)
			if len(name) == 64 && isLowerHex(name) {
				f.LFS, f.SHA256 = true, name
			} else if len(name) == 40 && isLowerHex(name) {
				f.BlobID = name
			}
		}
		files = append(files, f)
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, err
}

// linkSnapshot points snapshots/<commit>/<file> at blobs/<etag> with a
// relative symlink (../../blobs/<etag>, one more ../ per sub-folder), the
// way huggingface_hub does. Where symlinks are not possible it copies the
// blob (huggingface_hub's no-symlink mode).
func (rc repoCache) linkSnapshot(commit, file, etag string) error {
	link := rc.snapshotFile(commit, file)
	blob := rc.blobPath(etag)
	target, err := filepath.Rel(filepath.Dir(link), blob)
	if err != nil {
		return err
	}
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return err
	}
	tmp := fileutil.TempName(link)
	if err := os.Symlink(target, tmp); err != nil {
		if err := fileutil.CopyFile(context.Background(), blob, tmp); err != nil {
			return diskErr(err, tmp)
		}
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// cacheTag marks the cache for backup tools, as huggingface_hub does.
const cacheTag = "Signature: 8a477f597d28d172789f06886806bc55\n" +
	"# This file is a cache directory tag created by huggingface_hub.\n" +
	"# For information about cache directory tags, see:\n" +
	"#\thttps://bford.info/cachedir/\n"

func ensureCacheTag(root string) {
	p := filepath.Join(root, "CACHEDIR.TAG")
	if _, err := os.Stat(p); err == nil {
		return
	}
	fileutil.WriteFileAtomic(p, "", []byte(cacheTag))
}

// diskErr turns ENOSPC (and EDQUOT) into an ErrDiskFull that says where.
func diskErr(err error, path string) error {
	if err == nil {
		return nil
	}
	if fileutil.IsDiskFull(err) {
		return &Error{Kind: ErrDiskFull, File: path,
			Msg: fmt.Sprintf("no space left on the disk holding %s: free some space, or set HF_HUB_CACHE to a folder on a larger disk", path), Err: err}
	}
	return err
}
