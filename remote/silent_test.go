package remote

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anepack/anepack/internal/stall"
)

// silentServer is a loopback listener that accepts connections and, after sending head (which
// may be empty), never says anything more: the server of a stalled or hostile host.
func silentServer(t *testing.T, head string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				// Read the request so the client is not blocked writing it, then answer head.
				c.Read(make([]byte, 64<<10))
				c.Write([]byte(head))
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// TestSilentServers pulls from servers that accept and never answer (http://, https:// and oci://), that
// send a manifest's headers and never its body, and from a registry whose blob requests are
// never answered: each pull used to hang forever; now each fails as stalled within a few
// windows of StallTimeout.
func TestSilentServers(t *testing.T) {
	silent := silentServer(t, "")
	headers := silentServer(t, "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nContent-Length: 500\r\n\r\n{")
	manifest, blobs := bundleManifest(t, 1000)
	reg := fakeRegistry(t, manifest, blobs, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/blobs/sha256:") && blobs[strings.TrimPrefix(r.URL.Path, "/v2/ns/evil/blobs/")] != nil {
			w.Write(blobs[strings.TrimPrefix(r.URL.Path, "/v2/ns/evil/blobs/")])
			return
		}
		<-r.Context().Done() // the bundle's blob: never answered
	})
	for _, ref := range []string{
		"http://" + silent + "/model.aneb",
		"https://" + silent + "/model.aneb",
		"oci://" + silent + "/ns/evil:v1",
		"oci://" + headers + "/ns/evil:v1",
		"oci://" + strings.TrimPrefix(reg.URL, "http://") + "/ns/evil:v1",
	} {
		t.Run(ref, func(t *testing.T) {
			opts, _ := testOptions(t)
			opts.StallTimeout = 300 * time.Millisecond
			opts.Retries = 1
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			_, err := Pull(ctx, ref, opts)
			took := time.Since(start)
			if err == nil || !errors.Is(err, stall.ErrStalled) || ctx.Err() != nil {
				t.Fatalf("after %v: %v; want the pull to fail as stalled", took, err)
			}
			if took > 10*time.Second {
				t.Errorf("took %v to give up", took)
			}
			if !strings.Contains(err.Error(), "stalled") {
				t.Errorf("the error does not say the server stalled: %v", err)
			}
		})
	}
}
