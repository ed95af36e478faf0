package remote

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/anepack/anepack/hub"
	"github.com/anepack/anepack/internal/stall"
	"github.com/anepack/anepack/internal/transfer"
	"github.com/anepack/anepack/store"
)

// Defaults for the zero values of Options.
const (
	DefaultJobs         = 8
	DefaultChunkSize    = 64 << 20
	DefaultRetries      = 6
	DefaultStallTimeout = 30 * time.Second
	// DefaultFrameSize is the input size of one zstd frame of a compressed layer.
	DefaultFrameSize = 8 << 20
)

// Progress shows one transfer: the command-line tools draw it as a bar.
type Progress interface {
	// Set reports done bytes of total.
	Set(done, total int64)
	// Finish ends the display.
	Finish()
}

// Options configure pulls, pushes and Resolve. The zero value works: the default store, 8
// parallel streams, credentials from ~/.docker/config.json and HF_TOKEN.
type Options struct {
	// Store receives pulled bundles; nil opens store.OpenDefault.
	Store *store.Store

	// Digest is the expected digest ("sha256:<hex>") of an https:// bundle (--digest).
	// Without it an https:// bundle is checked by its own internal digests instead.
	Digest string

	// Username and Password authenticate to an OCI registry (--username,
	// --password-stdin); when empty, the Docker credential store is used.
	Username, Password string
	// DockerConfig is the Docker config file holding registry credentials; empty means
	// $DOCKER_CONFIG/config.json or ~/.docker/config.json.
	DockerConfig string
	// PlainHTTP talks to OCI registries over http:// (--plain-http), for local registries.
	PlainHTTP bool

	// Hub is the Hugging Face client for hf:// (endpoint, token, cache); nil means
	// hub.NewClientFromEnv.
	Hub *hub.Client
	// Private creates a missing hf:// repo as private on push.
	Private bool
	// Message is the commit message of an hf:// push; empty means "Upload <file> with anepack".
	Message string

	// Compress chooses the transport compression of an OCI push.
	Compress CompressMode
	// FrameSize is the input size of each zstd frame; default DefaultFrameSize.
	FrameSize int

	// Jobs is the number of parallel streams (ranged chunks, frames). Default DefaultJobs.
	Jobs int
	// ChunkSize is the size of the ranged chunks a large blob is fetched in. Default
	// DefaultChunkSize; negative fetches in one stream.
	ChunkSize int64
	// Retries is how many times a failing request is repeated; the count restarts
	// whenever bytes arrive. Default DefaultRetries; negative means none.
	Retries int
	// Backoff is the first retry delay, doubled each time up to 16× (default 500 ms).
	Backoff time.Duration
	// StallTimeout aborts, and then resumes, a transfer that received nothing for this
	// long, or less than MinRate bytes a second over this long; a request (a probe, a
	// registry's manifest) whose response headers take longer fails as stalled. Default
	// DefaultStallTimeout.
	StallTimeout time.Duration
	// MinRate is the slowest transfer, in bytes a second averaged over StallTimeout, that
	// counts as progress: a server trickling a byte a second is treated as stalled. Default
	// stall.DefaultMinRate (1 KiB/s); negative: any byte is progress.
	MinRate int64
	// HTTPClient is the base client for registries and https:// downloads (tests pass one
	// that trusts their certificate). Default: a clone of http.DefaultTransport.
	HTTPClient *http.Client

	// NewProgress, if set, starts a progress display for a transfer of total bytes.
	NewProgress func(label string, total int64) Progress
	// Log receives one line per notable event (retries, resumes, waits, the compression
	// decision); nil means silent. Secrets never appear in it.
	Log io.Writer

	// sleep replaces the backoff wait in tests.
	sleep func(ctx context.Context, d time.Duration) error
	// watched is HTTPClient behind the stall watchdog (httpClient).
	watched *http.Client
}

func (o *Options) jobs() int {
	if o.Jobs <= 0 {
		return DefaultJobs
	}
	return o.Jobs
}

func (o *Options) chunkSize() int64 {
	if o.ChunkSize == 0 {
		return DefaultChunkSize
	}
	return o.ChunkSize
}

func (o *Options) retries() int {
	if o.Retries == 0 {
		return DefaultRetries
	}
	return max(o.Retries, 0)
}

func (o *Options) stallTimeout() time.Duration {
	if o.StallTimeout <= 0 {
		return DefaultStallTimeout
	}
	return o.StallTimeout
}

func (o *Options) frameSize() int {
	if o.FrameSize <= 0 {
		return DefaultFrameSize
	}
	return o.FrameSize
}

// delay is the wait before retry n (0-based).
func (o *Options) delay(n int) time.Duration {
	d := o.Backoff
	if d <= 0 {
		d = 500 * time.Millisecond
	}
	for i := 0; i < n && i < 4; i++ {
		d *= 2
	}
	return d
}

func (o *Options) wait(ctx context.Context, d time.Duration) error {
	if o.sleep != nil {
		return o.sleep(ctx, d)
	}
	return transfer.Sleep(ctx, d)
}

func (o *Options) store() (*store.Store, error) {
	if o.Store != nil {
		return o.Store, nil
	}
	s, err := store.OpenDefault()
	if err != nil {
		return nil, err
	}
	s.Log = o.Log
	o.Store = s
	return s, nil
}

// httpClient returns HTTPClient (or the default one) with its GET and HEAD requests held to
// the stall policy (watchdog).
func (o *Options) httpClient() *http.Client {
	if o.watched != nil {
		return o.watched
	}
	if o.HTTPClient == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = o.jobs() + 2
		t.DisableCompression = true // sizes and digests are of the raw bytes
		t.ReadBufferSize = 256 << 10
		t.WriteBufferSize = 256 << 10
		o.HTTPClient = &http.Client{Transport: t}
	}
	base := o.HTTPClient.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c := *o.HTTPClient
	c.Transport = &watchdog{base: base, policy: stall.Policy{Window: o.stallTimeout(), MinRate: o.MinRate}}
	o.watched = &c
	return o.watched
}

// progress starts a display, or a silent one.
func (o *Options) progress(label string, total int64) Progress {
	if o.NewProgress == nil {
		return nopProgress{}
	}
	return o.NewProgress(label, total)
}

type nopProgress struct{}

func (nopProgress) Set(int64, int64) {}
func (nopProgress) Finish()          {}
