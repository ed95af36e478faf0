package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/internal/bytesize"
	"github.com/anepack/anepack/internal/transfer"
	"github.com/anepack/anepack/store"
)

// Pulled describes a bundle brought into the store.
type Pulled struct {
	Ref   Ref
	Entry store.Entry
	// Path is the verified bundle in the store.
	Path string
	// Cached is set when the bundle was already in the store and nothing was downloaded.
	Cached bool
	// Fetched counts the bytes received by this pull; Resumed the bytes an earlier,
	// interrupted pull had left.
	Fetched, Resumed int64
	// Compressed is set when the bundle came as a zstd-frames layer.
	Compressed bool
	Elapsed    time.Duration
}

// MBps is the bundle megabytes (10^6) made available per second, verification included.
func (p *Pulled) MBps() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Entry.Size-p.Resumed) / 1e6 / p.Elapsed.Seconds()
}

// Pull downloads the bundle a remote reference names into the store, verifies it and records
// the reference; a bundle already in the store is not downloaded again.
func Pull(ctx context.Context, ref string, opts Options) (*Pulled, error) {
	r, err := ParseRef(ref)
	if err != nil {
		return nil, err
	}
	return PullRef(ctx, r, opts)
}

// PullRef is Pull for a parsed reference.
func PullRef(ctx context.Context, r Ref, opts Options) (*Pulled, error) {
	if _, err := opts.store(); err != nil {
		return nil, err
	}
	start := time.Now()
	var p *Pulled
	var err error
	switch r.Kind {
	case OCI:
		p, err = opts.pullOCI(ctx, r)
	case HF:
		p, err = opts.pullHF(ctx, r)
	case HTTPS:
		p, err = opts.pullHTTPS(ctx, r)
	default:
		return nil, fmt.Errorf("%s is a local path: there is nothing to pull", r.File)
	}
	if err != nil {
		return nil, err
	}
	p.Ref = r
	p.Elapsed = time.Since(start)
	return p, nil
}

// fetchSpec is one blob to download into the store.
type fetchSpec struct {
	ref  Ref
	src  *source
	size int64 // bundle size, as the server claims it
	// sizeFrom names where size came from ("Content-Length", "config field size"), for messages.
	sizeFrom string
	// units are the frames of a compressed layer; nil for a plain one, which fetch cuts into
	// chunks once the size has been checked.
	units []*transfer.Unit
	// id identifies the source bytes and layout, for resuming.
	id string
	// want is the expected bundle digest; empty when unknown (then the bundle's own
	// digests are checked in full).
	want string
	// frames is set for a compressed layer.
	frames   bool
	transfer string // recorded in the entry
}

// cached names a bundle already in the store as ref.
func (o *Options) cached(ctx context.Context, r Ref, digest, transfer string) (*Pulled, error) {
	st := o.Store
	p, err := st.BlobPath(digest)
	if err != nil {
		return nil, err
	}
	e, err := entryFor(p)
	if err != nil {
		return nil, err
	}
	e.Reference, e.Digest, e.Transfer = r.String(), digest, transfer
	if err := st.SetRef(ctx, e); err != nil {
		return nil, err
	}
	return &Pulled{Entry: e, Path: p, Cached: true}, nil
}

// entryFor reads the model summary of a bundle.
func entryFor(path string) (store.Entry, error) {
	b, err := format.Open(path)
	if err != nil {
		return store.Entry{}, err
	}
	defer b.Close()
	m := b.Manifest().Model
	return store.Entry{Size: b.Size(), Model: store.Model{Name: m.Name, Architecture: m.Architecture, DType: m.DType, Parameters: m.Parameters}}, nil
}

// fetch downloads spec into the store's work area (resuming an earlier attempt), checks the
// digest and that the file is a bundle, and installs it.
func (o *Options) fetch(ctx context.Context, spec fetchSpec) (*Pulled, error) {
	st := o.Store
	if spec.want != "" && st.Has(spec.want) {
		return o.cached(ctx, spec.ref, spec.want, spec.transfer)
	}
	key := spec.want
	if key == "" {
		sum := sha256.Sum256([]byte(spec.id))
		key = "sha256:" + hex.EncodeToString(sum[:])
	}
	hexKey, _ := store.ParseDigest(key)
	part, err := st.OpenPart(ctx, hexKey, func() {
		o.logf("%s: another process is pulling the same bundle; waiting for it", spec.ref)
	})
	if err != nil {
		return nil, err
	}
	defer part.Close()
	if spec.want != "" && st.Has(spec.want) {
		return o.cached(ctx, spec.ref, spec.want, spec.transfer) // the other process finished
	}
	label := spec.ref.String()
	if err := o.checkClaim(label, spec.sizeFrom, spec.size, part.Path); err != nil {
		return nil, err
	}
	if spec.units == nil {
		spec.units = o.chunks(spec.size)
	}
	prog := o.progress(label, spec.size)
	defer prog.Finish()
	var written int64
	t := &transfer.Transfer{
		Source: spec.src, Path: part.Path, StatePath: part.StatePath, ID: spec.id,
		Size: spec.size, Units: spec.units, Jobs: o.jobs(),
		Retries: o.retries(), Delay: o.delay, Sleep: o.wait,
		Check:     st.CheckSpace,
		DiskError: func(err error) error { return st.DiskError(fmt.Errorf("writing %s: %w", part.Path, err)) },
		Progress:  func(n int64) { prog.Set(atomic.AddInt64(&written, n), spec.size) },
		Resumed: func(have int64) {
			o.logf("%s: resuming, %s of %s already here", label, bytesize.Format(have), bytesize.Format(spec.size))
		},
		Logf: o.logf, Label: label,
	}
	if spec.frames {
		dec, err := newFrameDecoder(o.jobs())
		if err != nil {
			return nil, err
		}
		defer dec.close()
		t.Decoder = dec
	}
	var res transfer.Result
	for attempt := 0; ; attempt++ {
		res, err = t.Run(ctx)
		if errors.Is(err, transfer.ErrChanged) && attempt == 0 {
			o.logf("%s: %v; starting over", spec.ref, err)
			part.Discard()
			continue
		}
		var gu *transfer.GiveUpError
		if errors.As(err, &gu) {
			err = fmt.Errorf("%s: %w", label, err)
		}
		if err != nil {
			if res.Have == 0 || (ctx.Err() == nil && !store.IsDiskFull(err)) {
				return nil, err
			}
			return nil, fmt.Errorf("%w (the partial download is kept in %s; the same command resumes it)", err, st.TempDir())
		}
		digest := "sha256:" + hex.EncodeToString(res.Sums[0])
		if spec.want != "" && digest != spec.want {
			part.Discard()
			if attempt == 0 {
				o.logf("%s: downloaded bytes hash to %s, expected %s; downloading again", spec.ref, digest, spec.want)
				continue
			}
			return nil, fmt.Errorf("%s: digest mismatch: the downloaded bytes hash to %s, expected %s (twice); nothing was installed", spec.ref, digest, spec.want)
		}
		break
	}
	e, err := checkBundle(part.Path, spec.want == "")
	if err != nil {
		part.Discard()
		return nil, fmt.Errorf("%s: %w; nothing was installed", spec.ref, err)
	}
	e.Reference, e.Digest, e.Transfer = spec.ref.String(), "sha256:"+hex.EncodeToString(res.Sums[0]), spec.transfer
	path, err := st.InstallHashed(ctx, part.Path, e)
	part.Discard()
	if err != nil {
		return nil, err
	}
	return &Pulled{Entry: e, Path: path, Fetched: res.Fetched, Resumed: res.Resumed, Compressed: spec.frames}, nil
}

// checkBundle opens a downloaded file as a bundle (header, table, manifest, root digest);
// full also checks every section digest and the padding, for a download whose digest was not
// known beforehand.
func checkBundle(path string, full bool) (store.Entry, error) {
	b, err := format.Open(path)
	if err != nil {
		return store.Entry{}, fmt.Errorf("not a valid .aneb bundle: %w", err)
	}
	defer b.Close()
	if full {
		if err := b.Verify(nil); err != nil {
			return store.Entry{}, fmt.Errorf("the bundle fails verification: %w", err)
		}
	}
	m := b.Manifest().Model
	return store.Entry{Size: b.Size(), Model: store.Model{Name: m.Name, Architecture: m.Architecture, DType: m.DType, Parameters: m.Parameters}}, nil
}

func (o *Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", args...)
	}
}

// Resolve returns a verified local path for any reference: a local path as is (it must
// exist); a remote reference from the store when it was pulled before (its bundle hashed in
// full first; a corrupt one is deleted, said so in the log, and pulled again), otherwise
// pulled now. This is what `anerun REF "prompt"` calls before mapping the bundle.
func Resolve(ctx context.Context, ref string, opts Options) (string, error) {
	r, err := ParseRef(ref)
	if err != nil {
		return "", err
	}
	if r.Kind == Local {
		fi, err := os.Stat(r.File)
		if err != nil {
			return "", fmt.Errorf("%s: %w (for a remote bundle use oci://, hf:// or https://)", r.File, errors.Unwrap(err))
		}
		if fi.IsDir() {
			return "", fmt.Errorf("%s is a directory, expected a .aneb bundle (pack it first: anepack %s)", r.File, r.File)
		}
		return r.File, nil
	}
	st, err := opts.store()
	if err != nil {
		return "", err
	}
	if e, err := st.Lookup(r.String()); err == nil && (r.Kind != HTTPS || opts.Digest == "" || opts.Digest == e.Digest) {
		prog := opts.progress("verifying "+r.String(), e.Size)
		p, err := st.Verify(ctx, e.Digest, prog.Set)
		prog.Finish()
		switch {
		case err == nil:
			return p, nil
		case errors.Is(err, store.ErrNotFound):
			opts.logf("%s: its bundle is no longer in the store; pulling it again", r)
		default:
			var ce *store.CorruptError
			if !errors.As(err, &ce) {
				return "", err
			}
			opts.logf("%v; pulling it again", err)
		}
	}
	p, err := PullRef(ctx, r, opts)
	if err != nil {
		return "", err
	}
	return p.Path, nil
}
