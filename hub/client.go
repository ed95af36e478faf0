package hub

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/anepack/anepack/internal/fileutil"
	"github.com/anepack/anepack/internal/transfer"
)

// DefaultEndpoint is the Hugging Face Hub.
const DefaultEndpoint = "https://huggingface.co"

// Defaults for the zero values of Client's fields.
const (
	DefaultJobs            = 8
	DefaultChunkSize       = 64 << 20
	DefaultMetadataTimeout = 10 * time.Second
	DefaultStallTimeout    = 10 * time.Second
	DefaultChecksumRetries = 2
)

// Client talks to a Hugging Face Hub (or a mirror) and keeps files in a
// Hugging Face cache. Set the fields before the first call; a Client is safe
// for concurrent use after that. Only CacheDir is required: every other zero
// field means the default documented on it (huggingface.co, no token, ...).
// NewClientFromEnv fills it from the environment the way huggingface_hub
// does.
type Client struct {
	// Endpoint is the Hub's base URL, without a trailing slash
	// (HF_ENDPOINT). Default DefaultEndpoint.
	Endpoint string
	// Token is sent as "Authorization: Bearer" to the Endpoint only.
	Token string
	// TokenSource says where Token came from ("HF_TOKEN", a token file's
	// path, "--token"), for error messages. Never the token itself.
	TokenSource string
	// CacheDir is the Hugging Face hub cache ($HF_HUB_CACHE). Required.
	CacheDir string
	// Offline answers from the cache only and makes no request at all
	// (HF_HUB_OFFLINE=1).
	Offline bool
	// Jobs is the number of parallel HTTP transfers: whole files, or ranged
	// chunks of a large file (--jobs). Default DefaultJobs.
	Jobs int
	// ChunkSize is the size of the ranged chunks a file larger than ChunkSize
	// is fetched in, in parallel, when the server honours Range. Default
	// DefaultChunkSize; a negative value disables chunking.
	ChunkSize int64
	// HTTP is the client used for every request. Its CheckRedirect is
	// ignored: redirects are followed by hand so that only relative ones are
	// followed on the Hub and the token never reaches another host.
	// Default: a client on a clone of http.DefaultTransport.
	HTTP *http.Client
	// Progress receives download progress; nil means none.
	Progress Progress
	// Log receives one line per notable event (retries, resumes, waits for
	// another process); nil means silent. The token never appears in it.
	Log io.Writer
	// Backoff is the retry policy for transient failures.
	Backoff Backoff
	// MetadataTimeout bounds each API call and HEAD without a response or
	// progress (HF_HUB_ETAG_TIMEOUT). Default DefaultMetadataTimeout.
	MetadataTimeout time.Duration
	// StallTimeout aborts (and then resumes) a download that received no
	// byte for this long (HF_HUB_DOWNLOAD_TIMEOUT), or less than MinRate
	// bytes a second over that long. Default DefaultStallTimeout.
	StallTimeout time.Duration
	// MinRate is the slowest transfer, in bytes a second averaged over
	// StallTimeout (MetadataTimeout for API calls), that counts as progress:
	// a server trickling a byte a second is treated as stalled. Default
	// stall.DefaultMinRate (1 KiB/s); negative: any byte is progress.
	MinRate int64
	// ChecksumRetries is how many times a file whose content does not match
	// its hash is downloaded again before giving up. Default
	// DefaultChecksumRetries; negative means no retry.
	ChecksumRetries int
	// UserAgent is sent with every request. Default "anepack-hub/1".
	UserAgent string

	once     sync.Once
	hc       *http.Client
	endpoint *url.URL
	initErr  error
	streams  chan struct{} // limits concurrent transfers to Jobs
	logMu    sync.Mutex
	// statFree reports the free bytes of the file system holding a
	// directory; tests replace it to simulate a full disk.
	statFree func(dir string) (int64, bool)
}

// init resolves defaults once; fields must not change afterwards.
func (c *Client) init() error {
	c.once.Do(func() {
		if c.Endpoint == "" {
			c.Endpoint = DefaultEndpoint
		}
		c.Endpoint = strings.TrimRight(c.Endpoint, "/")
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			c.initErr = fmt.Errorf("hub: invalid endpoint %q (HF_ENDPOINT): expected an http(s) URL such as %s", c.Endpoint, DefaultEndpoint)
			return
		}
		c.endpoint = u
		if c.CacheDir == "" {
			c.initErr = fmt.Errorf("hub: no cache directory: set HF_HUB_CACHE or HF_HOME, or Client.CacheDir")
			return
		}
		if c.Jobs <= 0 {
			c.Jobs = DefaultJobs
		}
		if c.ChunkSize == 0 {
			c.ChunkSize = DefaultChunkSize
		}
		if c.MetadataTimeout <= 0 {
			c.MetadataTimeout = DefaultMetadataTimeout
		}
		if c.StallTimeout <= 0 {
			c.StallTimeout = DefaultStallTimeout
		}
		if c.ChecksumRetries == 0 {
			c.ChecksumRetries = DefaultChecksumRetries
		} else if c.ChecksumRetries < 0 {
			c.ChecksumRetries = 0
		}
		if c.UserAgent == "" {
			c.UserAgent = "anepack-hub/1"
		}
		c.Backoff = c.Backoff.withDefaults()
		base := c.HTTP
		if base == nil {
			base = &http.Client{Transport: defaultTransport(c.Jobs)}
		}
		hc := *base
		// Redirects are followed by hand (see hubDo and contentGet).
		hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		// Timeouts are per-request watchdogs; a global one would kill long downloads.
		hc.Timeout = 0
		c.hc = &hc
		c.streams = make(chan struct{}, c.Jobs)
		if c.statFree == nil {
			c.statFree = fileutil.FreeSpace
		}
	})
	return c.initErr
}

// defaultTransport is tuned for a few large parallel streams to one CDN.
func defaultTransport(jobs int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = jobs + 2
	t.DisableCompression = true // sizes and hashes are of the raw bytes
	t.ReadBufferSize = 64 << 10
	t.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return t
}

// logf writes one line to Log, never the token.
func (c *Client) logf(format string, args ...any) {
	if c.Log == nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if c.Token != "" {
		msg = strings.ReplaceAll(msg, c.Token, "hf_***")
	}
	c.logMu.Lock()
	defer c.logMu.Unlock()
	fmt.Fprintf(c.Log, "hub: %s\n", msg)
}

// sleep waits d or until ctx is done, through the Backoff.Sleep hook.
func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if c.Backoff.Sleep != nil {
		return c.Backoff.Sleep(ctx, d)
	}
	return transfer.Sleep(ctx, d)
}

// prepare initialises the client and checks a repo id and a revision ("" means main), which
// it returns: what every call about a repo does first.
func (c *Client) prepare(repo, revision string) (string, error) {
	if err := c.init(); err != nil {
		return "", err
	}
	if revision == "" {
		revision = "main"
	}
	if err := checkRepoID(repo); err != nil {
		return "", err
	}
	return revision, checkRevision(revision)
}

// repoURL is the model page, where gated models' licenses are accepted.
func (c *Client) repoURL(repo string) string { return c.Endpoint + "/" + repo }

// resolveURL is {endpoint}/{repo}/resolve/{rev}/{file}: the revision is
// escaped as one segment (refs/pr/1 -> refs%2Fpr%2F1), the path keeps '/'.
func (c *Client) resolveURL(repo, rev, file string) string {
	segs := strings.Split(file, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return c.Endpoint + "/" + repo + "/resolve/" + url.PathEscape(rev) + "/" + strings.Join(segs, "/")
}
