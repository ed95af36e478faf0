package remote

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	godigest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/internal/bytesize"
	"github.com/anepack/anepack/internal/regfile"
	"github.com/anepack/anepack/store"
)

// Pushed describes an upload.
type Pushed struct {
	// Ref is where the bundle is now; for OCI it carries the manifest digest too.
	Ref          Ref
	BundleDigest string
	Size         int64
	// Compressed is set when the zstd-frames layer was pushed; Compression describes the
	// compression whether or not it was used (zero when it was not tried).
	Compressed  bool
	Compression CompressStats
	// Uploaded counts the bytes sent (0 when the registry or Hub had the bundle already).
	Uploaded int64
	// Commit is the Hub commit of an hf:// push.
	Commit  string
	Elapsed time.Duration
}

// Push uploads the bundle at path to an oci:// or hf:// reference.
func Push(ctx context.Context, path, ref string, opts Options) (*Pushed, error) {
	r, err := ParseRef(ref)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var p *Pushed
	switch r.Kind {
	case OCI:
		p, err = opts.pushOCI(ctx, path, r)
	case HF:
		p, err = opts.pushHF(ctx, path, r)
	case HTTPS:
		return nil, fmt.Errorf("%s: cannot push to a plain URL; push to oci://registry/ns/name:tag or hf://org/repo and serve that", r)
	default:
		return nil, fmt.Errorf("%s is a local path; push to oci://registry/ns/name:tag or hf://org/repo", r.File)
	}
	if err != nil {
		return nil, err
	}
	p.Elapsed = time.Since(start)
	return p, nil
}

// localBundle is the bundle to push: checked, summarized and hashed.
type localBundle struct {
	path   string
	size   int64
	digest string
	cfg    BundleConfig
}

// openBundle checks that path is a bundle (header, table, manifest, root digest) and hashes
// it: the plain sha256 names it in registries and in the store.
func (o *Options) openBundle(ctx context.Context, path string) (*localBundle, error) {
	b, err := format.Open(path)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	prog := o.progress("hashing "+filepath.Base(path), b.Size())
	digest, _, err := store.HashFile(ctx, path, prog.Set)
	prog.Finish()
	if err != nil {
		return nil, err
	}
	m := b.Manifest().Model
	return &localBundle{path: path, size: b.Size(), digest: digest, cfg: BundleConfig{
		Format: "aneb", FormatVersion: b.Header().Version(), Digest: digest, Size: b.Size(),
		Model: store.Model{Name: m.Name, Architecture: m.Architecture, DType: m.DType, Parameters: m.Parameters},
	}}, nil
}

// compressed is a zstd-frames file made for a push.
type compressed struct {
	path   string
	size   int64
	digest string
	index  *FrameIndex
	stats  CompressStats
}

// compress writes the bundle's zstd frames to a temporary file in the store's work area and
// hashes them on the way.
func (o *Options) compress(ctx context.Context, lb *localBundle) (*compressed, error) {
	st, err := o.store()
	if err != nil {
		return nil, err
	}
	if err := st.CheckSpace(lb.size); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(st.TempDir(), "push-*.zstf")
	if err != nil {
		return nil, st.DiskError(err)
	}
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	prog := o.progress("compressing "+filepath.Base(lb.path), lb.size)
	ix, stats, err := CompressBundle(ctx, lb.path, bw, o.frameSize(), prog.Set)
	prog.Finish()
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, st.DiskError(err)
	}
	return &compressed{path: f.Name(), size: stats.Compressed, digest: "sha256:" + hex.EncodeToString(h.Sum(nil)), index: ix, stats: stats}, nil
}

// pushOCI uploads the bundle as an OCI artifact (see ArtifactType) and tags it.
func (o *Options) pushOCI(ctx context.Context, path string, r Ref) (*Pushed, error) {
	if r.Digest != "" || r.Tag == "" {
		return nil, fmt.Errorf("%s: a push names a tag (oci://registry/ns/name:tag), not a digest", r)
	}
	lb, err := o.openBundle(ctx, path)
	if err != nil {
		return nil, err
	}
	out := &Pushed{BundleDigest: lb.digest, Size: lb.size}
	layer := ocispec.Descriptor{MediaType: LayerMediaType, Digest: godigest.Digest(lb.digest), Size: lb.size,
		Annotations: map[string]string{ocispec.AnnotationTitle: filepath.Base(path)}}
	open := func() (io.ReadCloser, error) { return regfile.Open(path) }
	compression := "none"
	cfg := lb.cfg
	if o.Compress != CompressNever {
		c, err := o.compress(ctx, lb)
		if err != nil {
			return nil, err
		}
		defer os.Remove(c.path)
		out.Compression = c.stats
		saves := 1 - c.stats.Ratio()
		if o.Compress == CompressAlways || saves > MinSaving {
			o.logf("%s: zstd frames: %s -> %s (ratio %.3f, %d frames, %.0f MB/s); pushing the compressed layer", r, bytesize.Format(lb.size), bytesize.Format(c.size), c.stats.Ratio(), c.stats.Frames, c.stats.MBps())
			out.Compressed = true
			compression = "zstd-frames"
			cfg.Compression = c.index
			layer = ocispec.Descriptor{MediaType: LayerMediaTypeZstdFrames, Digest: godigest.Digest(c.digest), Size: c.size,
				Annotations: map[string]string{ocispec.AnnotationTitle: filepath.Base(path) + ".zstf", AnnotationDigest: lb.digest}}
			open = func() (io.ReadCloser, error) { return regfile.Open(c.path) }
		} else {
			o.logf("%s: zstd frames would save only %.1f%% (ratio %.3f); pushing the plain bundle", r, 100*saves, c.stats.Ratio())
		}
	}
	repo, _, err := o.repository(r)
	if err != nil {
		return nil, err
	}
	uploaded, err := o.pushBlob(ctx, repo, r, layer, open, layer.Annotations[ocispec.AnnotationTitle])
	if err != nil {
		return nil, err
	}
	if uploaded {
		out.Uploaded += layer.Size
	}
	cdata, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cdesc := content.NewDescriptorFromBytes(ConfigMediaType, cdata)
	if _, err := o.pushBlob(ctx, repo, r, cdesc, func() (io.ReadCloser, error) { return io.NopCloser(bytesReader(cdata)), nil }, "config"); err != nil {
		return nil, err
	}
	mdata, err := manifestFor(cdesc, layer, &cfg, compression)
	if err != nil {
		return nil, err
	}
	mdesc, err := o.pushManifest(ctx, repo, r, mdata)
	if err != nil {
		return nil, err
	}
	out.Ref = r
	out.Ref.Digest = mdesc.Digest.String()
	return out, nil
}
