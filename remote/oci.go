package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	orasremote "oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/anepack/anepack/internal/bytesize"
	"github.com/anepack/anepack/store"
)

// The OCI artifact of a bundle: an image manifest with ArtifactType, a ConfigMediaType config
// (BundleConfig: the bundle's digest, size, model summary and, for a compressed layer, the
// frame index) and one layer, either the bundle as is (LayerMediaType; the layer digest is
// the bundle digest) or its zstd frames (LayerMediaTypeZstdFrames). The manifest carries the
// model summary as annotations (Annotation*), so registries' UIs and `oras manifest fetch`
// show what a tag holds.
const (
	ArtifactType             = "application/vnd.anepack.bundle.v1"
	ConfigMediaType          = "application/vnd.anepack.bundle.config.v1+json"
	LayerMediaType           = "application/vnd.anepack.bundle.layer.v1.aneb"
	LayerMediaTypeZstdFrames = "application/vnd.anepack.bundle.layer.v1.aneb.zstd-frames"

	AnnotationDigest        = "io.anepack.bundle.digest"
	AnnotationSize          = "io.anepack.bundle.size"
	AnnotationFormatVersion = "io.anepack.bundle.format-version"
	AnnotationCompression   = "io.anepack.bundle.compression"
	AnnotationModelName     = "io.anepack.model.name"
	AnnotationArchitecture  = "io.anepack.model.architecture"
	AnnotationDType         = "io.anepack.model.dtype"
	AnnotationParameters    = "io.anepack.model.parameters"
)

// maxManifest bounds the manifest and config a pull reads (the spec expects registries to
// take at least 4 MiB manifests).
const maxManifest = 4 << 20

// BundleConfig is the artifact's config blob.
type BundleConfig struct {
	Format        string      `json:"format"` // "aneb"
	FormatVersion string      `json:"format_version"`
	Digest        string      `json:"digest"` // sha256 of the plain bundle
	Size          int64       `json:"size"`
	Model         store.Model `json:"model"`
	// Compression is the frame index of a zstd-frames layer; nil for a plain layer.
	Compression *FrameIndex `json:"compression,omitempty"`
}

// repository connects to the registry of r with credentials from the options or the Docker
// credential store.
func (o *Options) repository(r Ref) (*orasremote.Repository, *auth.Client, error) {
	repo, err := orasremote.NewRepository(r.Registry + "/" + r.Repository)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", r, err)
	}
	repo.PlainHTTP = o.PlainHTTP
	client := &auth.Client{Client: o.httpClient(), Cache: auth.NewCache(), Header: http.Header{"User-Agent": {"anepack/1"}}}
	switch {
	case o.Username != "" || o.Password != "":
		client.Credential = auth.StaticCredential(r.Registry, auth.Credential{Username: o.Username, Password: o.Password})
	default:
		var cs credentials.Store
		if o.DockerConfig != "" {
			cs, err = credentials.NewStore(o.DockerConfig, credentials.StoreOptions{})
		} else {
			cs, err = credentials.NewStoreFromDocker(credentials.StoreOptions{})
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading registry credentials (Docker config): %w", err)
		}
		client.Credential = credentials.Credential(cs)
	}
	repo.Client = client
	return repo, client, nil
}

// ociError turns oras' errors into messages that say what to do.
func (o *Options) ociError(r Ref, what string, err error) error {
	if err == nil {
		return nil
	}
	var er *errcode.ErrorResponse
	switch {
	case errors.Is(err, errdef.ErrNotFound):
		if what == "manifest" {
			name := "tag " + r.Tag
			if r.Digest != "" {
				name = "digest " + r.Digest
			}
			return fmt.Errorf("%s: %s not found in %s/%s: %w", r, name, r.Registry, r.Repository, errdef.ErrNotFound)
		}
		return fmt.Errorf("%s: %s not found: %w", r, what, err)
	case errors.As(err, &er) && er.StatusCode == http.StatusUnauthorized,
		errors.Is(err, auth.ErrBasicCredentialNotFound):
		how := "check --username/--password-stdin"
		if o.Username == "" && o.Password == "" {
			how = "log in with `docker login " + r.Registry + "` or pass --username and --password-stdin"
		}
		return fmt.Errorf("%s: the registry refused the credentials (HTTP 401 unauthorized); %s", r, how)
	case errors.As(err, &er) && er.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%s: access denied (HTTP 403): the credentials do not allow this on %s", r, r.Repository)
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return fmt.Errorf("%s: the registry speaks plain HTTP; add --plain-http: %w", r, err)
	}
	return fmt.Errorf("%s: %s: %w", r, what, err)
}

// pullOCI resolves the tag or digest to the artifact's manifest, reads the config, and
// downloads the layer with parallel ranged requests through the registry's auth.
func (o *Options) pullOCI(ctx context.Context, r Ref) (*Pulled, error) {
	repo, client, err := o.repository(r)
	if err != nil {
		return nil, err
	}
	reference := r.Tag
	if r.Digest != "" {
		reference = r.Digest
	}
	mdesc, rc, err := repo.FetchReference(ctx, reference)
	if err != nil {
		return nil, o.ociError(r, "manifest", err)
	}
	data, err := content.ReadAll(io.LimitReader(rc, maxManifest+1), mdesc)
	rc.Close()
	if err != nil {
		return nil, o.ociError(r, "manifest", err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: the manifest is not valid JSON: %v", r, err)
	}
	if m.ArtifactType != ArtifactType && m.Config.MediaType != ConfigMediaType {
		return nil, fmt.Errorf("%s: not an anepack bundle (manifest %s has artifactType %q and config %q; expected %s)", r, mdesc.Digest, m.ArtifactType, m.Config.MediaType, ArtifactType)
	}
	if m.Config.Size > maxManifest {
		return nil, fmt.Errorf("%s: config of %d bytes is too large", r, m.Config.Size)
	}
	cdata, err := content.FetchAll(ctx, repo, m.Config)
	if err != nil {
		return nil, o.ociError(r, "config", err)
	}
	var cfg BundleConfig
	if err := json.Unmarshal(cdata, &cfg); err != nil {
		return nil, fmt.Errorf("%s: config %s: %v", r, m.Config.Digest, err)
	}
	if _, err := store.ParseDigest(cfg.Digest); err != nil || cfg.Size <= 0 {
		return nil, fmt.Errorf("%s: config %s: field digest/size: expected the bundle's sha256 and size, got %q, %d", r, m.Config.Digest, cfg.Digest, cfg.Size)
	}
	var layer *ocispec.Descriptor
	for i := range m.Layers {
		if mt := m.Layers[i].MediaType; mt == LayerMediaType || (mt == LayerMediaTypeZstdFrames && cfg.Compression != nil) {
			if layer == nil || mt == LayerMediaTypeZstdFrames {
				layer = &m.Layers[i]
			}
		}
	}
	if layer == nil {
		return nil, fmt.Errorf("%s: manifest %s has no bundle layer (%s or %s)", r, mdesc.Digest, LayerMediaType, LayerMediaTypeZstdFrames)
	}
	if o.Store.Has(cfg.Digest) {
		return o.cached(ctx, r, cfg.Digest, "oci")
	}
	rr := registry.Reference{Registry: r.Registry, Repository: r.Repository}
	scheme := "https"
	if o.PlainHTTP {
		scheme = "http"
	}
	src := &source{
		url:   fmt.Sprintf("%s://%s/v2/%s/blobs/%s", scheme, rr.Host(), r.Repository, layer.Digest),
		label: r.String(),
		do:    client.Do,
		scope: func(ctx context.Context) context.Context {
			return auth.AppendRepositoryScope(ctx, rr, auth.ActionPull)
		},
	}
	spec := fetchSpec{ref: r, src: src, size: cfg.Size, sizeFrom: "config " + m.Config.Digest.String() + " field size", want: cfg.Digest,
		id: "oci " + layer.Digest.String(), transfer: "oci"}
	if layer.MediaType == LayerMediaTypeZstdFrames {
		if err := cfg.Compression.check(cfg.Size, layer.Size); err != nil {
			return nil, fmt.Errorf("%s: config %s: %w", r, m.Config.Digest, err)
		}
		spec.units = cfg.Compression.units()
		spec.frames = true
		spec.id += fmt.Sprintf(" frames %d", len(spec.units))
		spec.transfer = fmt.Sprintf("oci zstd-frames %.3f", float64(layer.Size)/float64(cfg.Size))
	} else {
		if layer.Digest.String() != cfg.Digest || layer.Size != cfg.Size {
			return nil, fmt.Errorf("%s: the plain layer %s (%d bytes) is not the bundle %s (%d bytes) its config names", r, layer.Digest, layer.Size, cfg.Digest, cfg.Size)
		}
	}
	p, err := o.fetch(ctx, spec)
	if err != nil {
		var se *statusError
		if errors.As(err, &se) && se.code == http.StatusUnauthorized {
			return nil, o.ociError(r, "layer", &errcode.ErrorResponse{StatusCode: se.code})
		}
		return nil, err
	}
	return p, nil
}

// manifestFor builds the artifact manifest.
func manifestFor(cfgDesc, layer ocispec.Descriptor, cfg *BundleConfig, compression string) ([]byte, error) {
	ann := map[string]string{
		ocispec.AnnotationTitle: layer.Annotations[ocispec.AnnotationTitle],
		AnnotationDigest:        cfg.Digest,
		AnnotationSize:          fmt.Sprint(cfg.Size),
		AnnotationFormatVersion: cfg.FormatVersion,
		AnnotationCompression:   compression,
		AnnotationModelName:     cfg.Model.Name,
		AnnotationArchitecture:  cfg.Model.Architecture,
		AnnotationDType:         cfg.Model.DType,
		AnnotationParameters:    fmt.Sprint(cfg.Model.Parameters),
	}
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactType,
		Config:       cfgDesc,
		Layers:       []ocispec.Descriptor{layer},
		Annotations:  ann,
	}
	return json.Marshal(m)
}

// pushBlob uploads one blob unless the registry has it, retrying transient failures from
// the start (registries take a blob in one monolithic PUT).
func (o *Options) pushBlob(ctx context.Context, repo *orasremote.Repository, r Ref, desc ocispec.Descriptor, open func() (io.ReadCloser, error), label string) (uploaded bool, err error) {
	ok, err := repo.Exists(ctx, desc)
	if err != nil {
		return false, o.ociError(r, "blob "+desc.Digest.String(), err)
	}
	if ok {
		o.logf("%s: %s already in the registry; not uploading it", r, label)
		return false, nil
	}
	for attempt := 0; ; attempt++ {
		rc, err := open()
		if err != nil {
			return false, err
		}
		prog := o.progress("uploading "+label, desc.Size)
		cr := &countingReader{r: rc, total: desc.Size, prog: prog}
		err = repo.Push(ctx, desc, cr)
		rc.Close()
		prog.Finish()
		if err == nil {
			return true, nil
		}
		if ctx.Err() != nil || !retryable(err) || attempt >= o.retries() {
			return false, o.ociError(r, "upload of "+label, err)
		}
		d := o.delay(attempt)
		o.logf("%s: upload of %s failed after %s (%v); retrying in %v", r, label, bytesize.Format(cr.n), err, d)
		if err := o.wait(ctx, d); err != nil {
			return false, err
		}
	}
}

// countingReader reports upload progress.
type countingReader struct {
	r     io.Reader
	n     int64
	total int64
	prog  Progress
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.prog.Set(c.n, c.total)
	return n, err
}

// pushManifest uploads the manifest under the tag.
func (o *Options) pushManifest(ctx context.Context, repo *orasremote.Repository, r Ref, data []byte) (ocispec.Descriptor, error) {
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, data)
	if err := repo.PushReference(ctx, desc, bytes.NewReader(data), r.Tag); err != nil {
		return desc, o.ociError(r, "manifest upload", err)
	}
	return desc, nil
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
