package remote

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// faultProxy sits between a client and a real server on loopback and damages blob downloads
// the way networks do: it cuts responses after some bytes, slows them down, or flips a byte.
type faultProxy struct {
	srv  *httptest.Server
	addr string

	mu       sync.Mutex
	cutAfter int64 // cut a blob response after this many body bytes...
	cuts     int   // ...this many times
	rate     int64 // bytes per second of blob bodies; 0: full speed
	requests []string

	blobBytes atomic.Int64 // blob body bytes sent
}

func newFaultProxy(t testing.TB, upstream string) *faultProxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0) // cut bodies are the point
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method != http.MethodGet || !strings.Contains(resp.Request.URL.Path, "/blobs/") || resp.StatusCode/100 != 2 {
			return nil
		}
		p.mu.Lock()
		cut := int64(-1)
		if p.cuts > 0 && resp.ContentLength > p.cutAfter {
			p.cuts--
			cut = p.cutAfter
		}
		rate := p.rate
		p.mu.Unlock()
		resp.Body = &faultBody{rc: resp.Body, p: p, cut: cut, rate: rate, start: time.Now()}
		return nil
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.requests = append(p.requests, r.Method+" "+r.URL.Path+" "+r.Header.Get("Range"))
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	p.addr = strings.TrimPrefix(p.srv.URL, "http://")
	return p
}

func (p *faultProxy) setCuts(after int64, times int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutAfter, p.cuts = after, times
}

func (p *faultProxy) setRate(bps int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rate = bps
}

// blobGets counts GETs of one blob, and those that asked for a range starting after byte 0.
func (p *faultProxy) blobGets(digest string) (all, resumed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.requests {
		if strings.HasPrefix(r, "GET ") && strings.Contains(r, "/blobs/"+digest) {
			all++
			if strings.Contains(r, "bytes=") && !strings.Contains(r, "bytes=0-") {
				resumed++
			}
		}
	}
	return
}

type faultBody struct {
	rc    io.ReadCloser
	p     *faultProxy
	cut   int64
	rate  int64
	sent  int64
	start time.Time
}

func (b *faultBody) Read(buf []byte) (int, error) {
	if b.cut >= 0 && b.sent >= b.cut {
		return 0, io.ErrUnexpectedEOF // the proxy aborts the connection mid-body
	}
	if b.cut >= 0 && int64(len(buf)) > b.cut-b.sent {
		buf = buf[:b.cut-b.sent]
	}
	if b.rate > 0 && len(buf) > 64<<10 {
		buf = buf[:64<<10]
	}
	n, err := b.rc.Read(buf)
	b.sent += int64(n)
	b.p.blobBytes.Add(int64(n))
	if b.rate > 0 {
		due := time.Duration(float64(b.sent) / float64(b.rate) * float64(time.Second))
		if wait := due - time.Since(b.start); wait > 0 {
			time.Sleep(wait)
		}
	}
	return n, err
}

func (b *faultBody) Close() error { return b.rc.Close() }
