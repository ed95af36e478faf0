package hub

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestUploadTokenStaysOnTheHub sends upload API calls through two loopback servers, the Hub
// and a CDN on the same host name but another port. The token goes to the Hub and along the
// Hub's own redirects, never to the CDN nor back to the Hub along a redirect the CDN chose.
// Go's default redirect policy forwards Authorization to the same host name on any port and to
// every subdomain (cdn-lfs.huggingface.co of huggingface.co), so the CDN used to receive it.
// The endpoint is matched without regard to case (it used to be case-sensitive).
func TestUploadTokenStaysOnTheHub(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	note := func(who string, r *http.Request) {
		mu.Lock()
		seen[who+r.URL.Path] = r.Header.Get("Authorization")
		mu.Unlock()
	}
	var hubURL string
	localhost := func(u string) string { return strings.Replace(u, "127.0.0.1", "localhost", 1) }
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		note("cdn", r)
		http.Redirect(w, r, hubURL+"/api/back", http.StatusTemporaryRedirect)
	}))
	defer cdn.Close()
	hubSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		note("hub", r)
		switch r.URL.Path {
		case "/api/start":
			http.Redirect(w, r, localhost(cdn.URL)+"/upload", http.StatusTemporaryRedirect)
		case "/api/hop":
			http.Redirect(w, r, hubURL+"/api/final", http.StatusTemporaryRedirect)
		default:
			w.Write([]byte(`{}`))
		}
	}))
	defer hubSrv.Close()
	hubURL = localhost(hubSrv.URL)
	// The endpoint as configured, in capitals: the same origin as the URLs the calls use.
	endpoint := strings.ToUpper(strings.TrimPrefix(hubURL, "http://"))
	c := &Client{Endpoint: "http://" + endpoint, Token: "hf_secret", CacheDir: t.TempDir()}
	if err := c.init(); err != nil {
		t.Fatal(err)
	}
	up := c.uploader(UploadOptions{HTTP: &http.Client{}, Delay: func(int) time.Duration { return time.Millisecond }})
	ctx := context.Background()
	for _, path := range []string{"/api/start", "/api/hop"} {
		if _, err := up.call(ctx, "test call", http.MethodPost, hubURL+path, "application/json", []byte(`{}`), nil); err != nil {
			t.Fatal(err)
		}
	}
	for key, want := range map[string]string{
		"hub/api/start": "Bearer hf_secret",
		"cdn/upload":    "",
		"hub/api/back":  "", // chosen by the CDN
		"hub/api/hop":   "Bearer hf_secret",
		"hub/api/final": "Bearer hf_secret", // chosen by the Hub
	} {
		mu.Lock()
		got, ok := seen[key]
		mu.Unlock()
		if !ok {
			t.Errorf("no request for %s (saw %v)", key, seen)
		} else if got != want {
			t.Errorf("%s carried Authorization %q; want %q", key, got, want)
		}
	}
}
