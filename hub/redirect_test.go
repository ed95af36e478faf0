package hub

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// authLog records, per path, the Authorization header each request carried.
type authLog struct {
	mu   sync.Mutex
	seen map[string]string
}

func (l *authLog) note(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[r.Host+r.URL.Path] = r.Header.Get("Authorization")
}

func (l *authLog) get(key string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.seen[key]
	return v, ok
}

// TestTokenStaysOnTheHub runs a download request against two loopback servers, the Hub and a
// CDN. The token goes to the Hub and along the Hub's own redirects (an absolute one too, and
// whatever the case of the host name), never to the CDN, and not back to the Hub when the CDN
// redirects there: the client used to attach it again to any request for the Hub's host, so a
// CDN (or whoever controls its redirects) could have it sent wherever the Hub serves.
func TestTokenStaysOnTheHub(t *testing.T) {
	log := &authLog{seen: map[string]string{}}
	var hubURL string
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.note(r)
		http.Redirect(w, r, hubURL+"/back", http.StatusFound) // the CDN chooses the Hub
	}))
	defer cdn.Close()
	hubSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.note(r)
		switch r.URL.Path {
		case "/start":
			http.Redirect(w, r, cdn.URL+"/blob", http.StatusFound)
		case "/hop":
			// The Hub's own absolute redirect, with the host in capitals.
			http.Redirect(w, r, strings.Replace(hubURL, "localhost", "LOCALHOST", 1)+"/final", http.StatusFound)
		default:
			io.WriteString(w, "content")
		}
	}))
	defer hubSrv.Close()
	hubURL = strings.Replace(hubSrv.URL, "127.0.0.1", "localhost", 1)
	hubHost := strings.TrimPrefix(hubURL, "http://")

	c, _ := newClient(t, nil)
	c.Endpoint, c.Token = hubURL, "hf_secret"
	if err := c.init(); err != nil {
		t.Fatal(err)
	}
	get := func(path string) {
		t.Helper()
		u := *c.endpoint
		u.Path = path
		resp, err := c.contentGet(c.newRequest(context.Background(), http.MethodGet, &u, c.onEndpoint(&u)))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "content" {
			t.Fatalf("GET %s: %q", path, body)
		}
	}
	get("/start")
	get("/hop")
	want := map[string]string{
		hubHost + "/start": "Bearer hf_secret",
		strings.TrimPrefix(cdn.URL, "http://") + "/blob": "",
		hubHost + "/back": "", // chosen by the CDN
		hubHost + "/hop":  "Bearer hf_secret",
		strings.ToUpper(hubHost[:9]) + hubHost[9:] + "/final": "Bearer hf_secret", // chosen by the Hub
	}
	for key, auth := range want {
		got, ok := log.get(key)
		if !ok {
			t.Errorf("no request for %s (saw %v)", key, log.seen)
			continue
		}
		if got != auth {
			t.Errorf("%s carried Authorization %q; want %q", key, got, auth)
		}
	}
}
