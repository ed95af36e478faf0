package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	godigest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// fakeRegistry serves one OCI manifest (as repository ns/evil, tag v1) and blobs by digest over
// plain HTTP on loopback: what a hostile registry may say, within the protocol. blob, when set,
// answers the blob requests instead.
func fakeRegistry(t *testing.T, manifest []byte, blobs map[string][]byte, blob http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2/":
			w.WriteHeader(http.StatusOK)
		case r.URL.Path == "/v2/ns/evil/manifests/v1":
			w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
			w.Header().Set("Docker-Content-Digest", godigest.FromBytes(manifest).String())
			w.Header().Set("Content-Length", strconv.Itoa(len(manifest)))
			w.Write(manifest)
		case strings.HasPrefix(r.URL.Path, "/v2/ns/evil/blobs/"):
			if blob != nil {
				blob(w, r)
				return
			}
			data, ok := blobs[strings.TrimPrefix(r.URL.Path, "/v2/ns/evil/blobs/")]
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(data)))
			w.Write(data)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// bundleManifest is an anepack artifact manifest whose config claims a plain bundle of size
// bytes, with the config blob it names.
func bundleManifest(t *testing.T, size int64) (manifest []byte, blobs map[string][]byte) {
	t.Helper()
	sum := sha256.Sum256([]byte("a bundle that does not exist"))
	bundle := "sha256:" + hex.EncodeToString(sum[:])
	cfg, err := json.Marshal(BundleConfig{Format: "aneb", FormatVersion: "1.0", Digest: bundle, Size: size})
	if err != nil {
		t.Fatal(err)
	}
	cdesc := ocispec.Descriptor{MediaType: ConfigMediaType, Digest: godigest.FromBytes(cfg), Size: int64(len(cfg))}
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ArtifactType, Config: cdesc,
		Layers: []ocispec.Descriptor{{MediaType: LayerMediaType, Digest: godigest.Digest(bundle), Size: size}}}
	m.SchemaVersion = 2
	manifest, err = json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return manifest, map[string][]byte{cdesc.Digest.String(): cfg}
}

// pullAllocates runs a pull that must fail, and returns its error and what it allocated.
func pullAllocates(t *testing.T, ref string, opts Options) (error, uint64) {
	t.Helper()
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	start := time.Now()
	_, err := Pull(context.Background(), ref, opts)
	goruntime.ReadMemStats(&after)
	if err == nil {
		t.Fatalf("%s: the pull succeeded", ref)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("%s: the pull took %v to fail", ref, d)
	}
	return err, after.TotalAlloc - before.TotalAlloc
}

// TestClaimedSizeHTTP pulls from a server that claims 10^15 bytes (Content-Length, or
// Content-Range where HEAD is refused): the pull used to build 15 million chunk records
// (2.2 GB in 5 s, then out of memory) before the free-space check. Now the claim is refused at
// once, naming it and the bound; a claim within the bound is checked against the free space
// before anything else.
func TestClaimedSizeHTTP(t *testing.T) {
	for _, tc := range []struct {
		name  string
		size  int64
		head  bool
		wants []string
	}{
		{"content-length", 1e15, true, []string{"the HTTP Content-Length claims a bundle of 1000000000000000 bytes; expected 1 to 4398046511104 (4 TiB)"}},
		{"content-range", 1e15, false, []string{"the HTTP Content-Range claims a bundle of 1000000000000000 bytes; expected 1 to"}},
		{"past the free space", maxBundleSize, true, []string{"claims a bundle of 4398046511104 bytes: store: need 4398046511104 bytes but only"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.Method == http.MethodHead && tc.head:
					w.Header().Set("Content-Length", strconv.FormatInt(tc.size, 10))
				case r.Method == http.MethodHead:
					w.WriteHeader(http.StatusMethodNotAllowed)
				case r.Header.Get("Range") == "bytes=0-0" && !tc.head:
					w.Header().Set("Content-Range", "bytes 0-0/"+strconv.FormatInt(tc.size, 10))
					w.WriteHeader(http.StatusPartialContent)
					w.Write([]byte{'A'})
				default:
					http.Error(w, "no", http.StatusInternalServerError)
				}
			}))
			defer srv.Close()
			opts, _ := testOptions(t)
			opts.Retries = -1
			if free, ok := opts.Store.FreeSpace(); ok && free >= tc.size {
				tc.wants = []string{"HTTP 500"} // a disk this large holds the claim; it fails on the download
			}
			err, alloc := pullAllocates(t, srv.URL+"/model.aneb", opts)
			for _, want := range tc.wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if alloc > 64<<20 {
				t.Errorf("the pull allocated %d MB for a claim it refused", alloc>>20)
			}
		})
	}
}

// TestClaimedSizeOCI pulls from a registry whose artifact's config (and plain layer) claim a
// bundle of 2^62 bytes: refused before any chunk is planned, naming the config and the field.
func TestClaimedSizeOCI(t *testing.T) {
	manifest, blobs := bundleManifest(t, 1<<62)
	srv := fakeRegistry(t, manifest, blobs, nil)
	opts, _ := testOptions(t)
	opts.Retries = -1
	var cfgDigest string
	for d := range blobs {
		cfgDigest = d
	}
	err, alloc := pullAllocates(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/ns/evil:v1", opts)
	if want := "config " + cfgDigest + " field size claims a bundle of 4611686018427387904 bytes; expected 1 to"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if alloc > 64<<20 {
		t.Errorf("the pull allocated %d MB for a claim it refused", alloc>>20)
	}
}
