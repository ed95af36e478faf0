package hub

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Backoff is the retry policy for transient failures (408, 429, 5xx,
// connection errors, stalls). The defaults are huggingface_hub's: 5 retries,
// 1 s doubling to 8 s. A server's Retry-After or RateLimit header replaces the
// computed delay.
type Backoff struct {
	// Retries is how many times a failing request is repeated; for a
	// download the count restarts whenever bytes arrive. Default 5; negative
	// means none.
	Retries int
	// Initial is the first delay, doubled after each failure. Default 1 s.
	Initial time.Duration
	// Max caps the computed delay. Default 8 s.
	Max time.Duration
	// MaxWait is the longest server-requested wait (Retry-After, RateLimit)
	// that is honoured; a longer one fails at once with ErrRateLimited so the
	// user can decide. Default 5 minutes.
	MaxWait time.Duration
	// Sleep, when set, replaces the real wait (tests record the delays).
	Sleep func(ctx context.Context, d time.Duration) error
}

func (b Backoff) withDefaults() Backoff {
	if b.Retries == 0 {
		b.Retries = 5
	} else if b.Retries < 0 {
		b.Retries = 0
	}
	if b.Initial <= 0 {
		b.Initial = time.Second
	}
	if b.Max <= 0 {
		b.Max = 8 * time.Second
	}
	if b.MaxWait <= 0 {
		b.MaxWait = 5 * time.Minute
	}
	return b
}

// delay is the wait before retry number n (0-based).
func (b Backoff) delay(n int) time.Duration {
	d := b.Initial
	for i := 0; i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// serverWait is the wait a response asks for: the IETF RateLimit header
// (`"api";r=0;t=55`: t seconds until the window resets, plus one second as
// huggingface_hub does), else Retry-After in seconds or as an HTTP date.
func serverWait(h http.Header, now time.Time) (time.Duration, bool) {
	if t, ok := parseRateLimit(h.Get("RateLimit")); ok {
		return time.Duration(t+1) * time.Second, true
	}
	ra := strings.TrimSpace(h.Get("Retry-After"))
	if ra == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(ra, 10, 64); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second, true
	}
	if when, err := http.ParseTime(ra); err == nil {
		return max(when.Sub(now), 0), true
	}
	return 0, false
}

// parseRateLimit reads a RateLimit structured-field list such as
// `"api";r=0;t=55, "pages";r=10;t=3` and returns the reset time of an
// exhausted item (r=0), or the largest reset time if none says r=0.
func parseRateLimit(v string) (int64, bool) {
	if v == "" {
		return 0, false
	}
	var exhausted, anyT int64 = -1, -1
	for _, item := range strings.Split(v, ",") {
		r, t := int64(-1), int64(-1)
		for _, p := range strings.Split(item, ";") {
			k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok {
				continue
			}
			n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64)
			if err != nil || n < 0 {
				continue
			}
			switch k {
			case "r":
				r = n
			case "t":
				t = n
			}
		}
		if t < 0 {
			continue
		}
		anyT = max(anyT, t)
		if r == 0 {
			exhausted = max(exhausted, t)
		}
	}
	if exhausted >= 0 {
		return exhausted, true
	}
	return anyT, anyT >= 0
}

// retryableErr reports whether a transport error may go away by trying again.
// Certificate problems and a cancelled context do not.
func retryableErr(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	var certErr *x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var recErr tls.RecordHeaderError
	if errors.As(err, &certErr) || errors.As(err, &hostErr) || errors.As(err, &invalid) || errors.As(err, &recErr) {
		return false
	}
	return !errors.Is(err, ErrDiskFull)
}
