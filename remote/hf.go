package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/anepack/anepack/hub"
	"github.com/anepack/anepack/store"
)

// hubClient is Options.Hub, or a client from the environment whose progress goes to
// Options.NewProgress.
func (o *Options) hubClient() (*hub.Client, error) {
	if o.Hub != nil {
		return o.Hub, nil
	}
	env, err := hub.LoadEnv(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	c := env.Client()
	c.Log = o.Log
	if o.NewProgress != nil {
		c.Progress = &hubProgress{o: o}
	}
	c.Jobs = o.jobs()
	o.Hub = c
	return c, nil
}

// hubProgress shows a hub download on an Options progress display.
type hubProgress struct {
	o     *Options
	p     Progress
	total int64
	done  atomic.Int64
}

func (h *hubProgress) Start(files int, bytes int64) {
	h.total = bytes
	h.p = h.o.progress("downloading", bytes)
}
func (h *hubProgress) Add(n int64) {
	if h.p != nil {
		h.p.Set(h.done.Add(n), h.total)
	}
}
func (h *hubProgress) FileDone(string, int64) {}
func (h *hubProgress) Finish() {
	if h.p != nil {
		h.p.Finish()
	}
}

// pullHF downloads the file with the hub client (Hugging Face cache, resume, parallel
// chunks, sha256 verification) and brings it into the store as a hard link (a copy across
// file systems), hashed once more on the way in.
func (o *Options) pullHF(ctx context.Context, r Ref) (*Pulled, error) {
	c, err := o.hubClient()
	if err != nil {
		return nil, err
	}
	file := r.Path
	if file == "" {
		files, err := c.ListFiles(ctx, r.Repo, r.Revision)
		if err != nil {
			return nil, err
		}
		var found []hub.FileInfo
		for _, f := range files {
			if strings.HasSuffix(f.Path, ".aneb") {
				found = append(found, f)
			}
		}
		switch len(found) {
		case 0:
			return nil, fmt.Errorf("%s: no .aneb file in %s at %s; name one: hf://%s/file.aneb", r, r.Repo, r.Revision, r.Repo)
		case 1:
			file = found[0].Path
		default:
			var names []string
			for _, f := range found {
				names = append(names, f.Path)
			}
			return nil, fmt.Errorf("%s: %d bundles in %s (%s); name one: hf://%s/file.aneb", r, len(found), r.Repo, strings.Join(names, ", "), r.Repo)
		}
	}
	fi, err := c.DownloadFile(ctx, r.Repo, r.Revision, file)
	if err != nil {
		return nil, err
	}
	digest := "sha256:" + fi.SHA256
	if _, err := store.ParseDigest(digest); err != nil {
		return nil, fmt.Errorf("%s: the hub client reported no sha256 for %s", r, file)
	}
	if o.Store.Has(digest) {
		return o.cached(ctx, r, digest, "hf")
	}
	e, err := checkBundle(fi.LocalPath, false)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", r, file, err)
	}
	e.Reference, e.Digest, e.Transfer = r.String(), digest, "hf"
	p, err := o.Store.InstallFrom(ctx, fi.LocalPath, e)
	if err != nil {
		return nil, err
	}
	var fetched int64
	if !fi.Cached {
		fetched = fi.Size
	}
	return &Pulled{Entry: e, Path: p, Fetched: fetched}, nil
}

// pushHF uploads the bundle to a Hub repo (created if missing) through LFS and commits it,
// with the hub client's upload API under this package's retry policy and displays.
func (o *Options) pushHF(ctx context.Context, path string, r Ref) (*Pushed, error) {
	c, err := o.hubClient()
	if err != nil {
		return nil, err
	}
	lb, err := o.openBundle(ctx, path)
	if err != nil {
		return nil, err
	}
	file := r.Path
	if file == "" {
		file = filepath.Base(path)
	}
	up, err := c.Upload(ctx, r.Repo, r.Revision, path, file, hub.UploadOptions{
		Label: r.String(), Private: o.Private, Message: o.Message,
		SHA256: strings.TrimPrefix(lb.digest, "sha256:"), Jobs: o.jobs(),
		Retries: o.retries(), Delay: o.delay, Sleep: o.wait, HTTP: o.httpClient(),
		NewProgress: func(label string, total int64) hub.UploadProgress { return o.progress(label, total) },
		Logf:        o.logf,
	})
	if err != nil {
		return nil, err
	}
	out := &Pushed{Ref: r, BundleDigest: lb.digest, Size: lb.size, Uploaded: up.Sent, Commit: up.Commit}
	out.Ref.Path = file
	return out, nil
}
