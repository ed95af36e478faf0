package remote

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"

	"github.com/anepack/anepack/store"
)

// TestOCIPushPull pushes a real bundle to a real registry (compressed: the tiny bundle
// saves more than 10%), then pulls it by tag and by digest into fresh stores.
func TestOCIPushPull(t *testing.T) {
	ctx := context.Background()
	bundle := tinyBundle(t)
	reg := startRegistry(t, false)
	opts, _ := testOptions(t)
	ref := reg.ref("anepack/tiny:v1")
	pushed, err := Push(ctx, bundle, ref, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !pushed.Compressed || pushed.Compression.Ratio() >= 1-MinSaving || pushed.Uploaded == 0 {
		t.Fatalf("push: %+v; want the compressed layer", pushed)
	}
	want, _, _ := store.HashFile(ctx, bundle, nil)
	if pushed.BundleDigest != want {
		t.Fatalf("push reports digest %s, the bundle is %s", pushed.BundleDigest, want)
	}
	// What the registry holds: an artifact manifest with the model summary.
	var m ocispec.Manifest
	raw := getBody(t, fmt.Sprintf("http://%s/v2/anepack/tiny/manifests/v1", reg.addr), map[string]string{"Accept": ocispec.MediaTypeImageManifest})
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.ArtifactType != ArtifactType || m.Config.MediaType != ConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != LayerMediaTypeZstdFrames {
		t.Errorf("manifest: artifactType %q config %q layers %+v", m.ArtifactType, m.Config.MediaType, m.Layers)
	}
	if m.Annotations[AnnotationDigest] != want || m.Annotations[AnnotationModelName] != "tiny" || m.Annotations[AnnotationArchitecture] != "Qwen2ForCausalLM" || m.Annotations[AnnotationDType] != "f16" {
		t.Errorf("manifest annotations: %v", m.Annotations)
	}

	// Pull by tag into a fresh store.
	popts, _ := testOptions(t)
	p, err := Pull(ctx, ref, popts)
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, bundle, p.Path)
	if !p.Compressed || p.Cached || p.Entry.Digest != want || p.Entry.Reference != ref || p.Entry.Model.Name != "tiny" {
		t.Errorf("pull by tag: %+v", p)
	}
	if p.Fetched >= p.Entry.Size {
		t.Errorf("fetched %d bytes of a %d-byte bundle: the compressed layer should be smaller", p.Fetched, p.Entry.Size)
	}
	// A second pull finds it in the store.
	again, err := Pull(ctx, ref, popts)
	if err != nil || !again.Cached || again.Path != p.Path {
		t.Fatalf("second pull: %+v, %v", again, err)
	}

	// Pull by digest into another store.
	dopts, _ := testOptions(t)
	byDigest := reg.ref("anepack/tiny@" + pushed.Ref.Digest)
	p2, err := Pull(ctx, byDigest, dopts)
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, bundle, p2.Path)
	if p2.Entry.Reference != byDigest {
		t.Errorf("pull by digest recorded as %q", p2.Entry.Reference)
	}
	list, _ := dopts.Store.List()
	if len(list) != 1 || list[0].Reference != byDigest || list[0].Digest != want {
		t.Errorf("List after pull by digest: %+v", list)
	}
}

// TestOCIPlainLayer pushes without compression: the layer digest is the bundle digest, and
// the pull fetches it in parallel ranged chunks.
func TestOCIPlainLayer(t *testing.T) {
	ctx := context.Background()
	bundle := tinyBundle(t)
	reg := startRegistry(t, false)
	opts, _ := testOptions(t)
	opts.Compress = CompressNever
	ref := reg.ref("anepack/tiny:plain")
	pushed, err := Push(ctx, bundle, ref, opts)
	if err != nil {
		t.Fatal(err)
	}
	if pushed.Compressed {
		t.Fatal("compressed despite CompressNever")
	}
	var m ocispec.Manifest
	json.Unmarshal(getBody(t, fmt.Sprintf("http://%s/v2/anepack/tiny/manifests/plain", reg.addr), map[string]string{"Accept": ocispec.MediaTypeImageManifest}), &m)
	if len(m.Layers) != 1 || m.Layers[0].MediaType != LayerMediaType || m.Layers[0].Digest.String() != pushed.BundleDigest {
		t.Fatalf("plain layer: %+v, want digest %s", m.Layers, pushed.BundleDigest)
	}
	// A second push uploads nothing new.
	again, err := Push(ctx, bundle, ref, opts)
	if err != nil || again.Uploaded != 0 {
		t.Fatalf("second push uploaded %d bytes (%v); the registry has the blob", again.Uploaded, err)
	}
	proxy := newFaultProxy(t, "http://"+reg.addr)
	popts, _ := testOptions(t)
	popts.ChunkSize = 4 << 20
	popts.Jobs = 4
	p, err := Pull(ctx, "oci://"+proxy.addr+"/anepack/tiny:plain", popts)
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, bundle, p.Path)
	all, ranged := proxy.blobGets(pushed.BundleDigest)
	if chunks := int((p.Entry.Size + popts.ChunkSize - 1) / popts.ChunkSize); all != chunks || ranged != chunks-1 {
		t.Errorf("%d blob requests (%d ranged past 0), want %d chunks", all, ranged, chunks)
	}
}

func TestOCIAuth(t *testing.T) {
	ctx := context.Background()
	bundle := tinyBundle(t)
	reg := startRegistry(t, true)
	ref := reg.ref("private/tiny:v1")

	noCreds, _ := testOptions(t)
	noCreds.Compress = CompressNever
	noCreds.DockerConfig = filepath.Join(t.TempDir(), "config.json") // none
	_, err := Push(ctx, bundle, ref, noCreds)
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "docker login") {
		t.Fatalf("push without credentials: %v", err)
	}

	opts, _ := testOptions(t)
	opts.Compress = CompressNever
	opts.Username, opts.Password = regUser, regPass
	if _, err := Push(ctx, bundle, ref, opts); err != nil {
		t.Fatal(err)
	}

	wrong, _ := testOptions(t)
	wrong.Username, wrong.Password = regUser, "not-the-password"
	_, err = Pull(ctx, ref, wrong)
	if err == nil || !strings.Contains(err.Error(), "refused the credentials") || strings.Contains(err.Error(), "not-the-password") {
		t.Fatalf("pull with a wrong password: %v", err)
	}
	if v := visible(t, wrong.Store); len(v) != 0 {
		t.Errorf("a refused pull left %v", v)
	}

	// Credentials from a Docker config file, as `docker login` writes them.
	cfg := filepath.Join(t.TempDir(), "config.json")
	auth := base64.StdEncoding.EncodeToString([]byte(regUser + ":" + regPass))
	os.WriteFile(cfg, []byte(`{"auths":{"`+reg.addr+`":{"auth":"`+auth+`"}}}`), 0o600)
	docker, _ := testOptions(t)
	docker.DockerConfig = cfg
	p, err := Pull(ctx, ref, docker)
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, bundle, p.Path)
}

func TestOCIMissingTag(t *testing.T) {
	reg := startRegistry(t, false)
	opts, _ := testOptions(t)
	_, err := Pull(context.Background(), reg.ref("anepack/none:nope"), opts)
	if !errors.Is(err, errdef.ErrNotFound) || !strings.Contains(err.Error(), "tag nope not found") {
		t.Fatalf("pull of a missing tag: %v", err)
	}
}

// TestOCIRegistryRestart pulls by tag and by digest after the registry restarted.
func TestOCIRegistryRestart(t *testing.T) {
	ctx := context.Background()
	bundle := tinyBundle(t)
	reg := startRegistry(t, false)
	opts, _ := testOptions(t)
	pushed, err := Push(ctx, bundle, reg.ref("anepack/tiny:v1"), opts)
	if err != nil {
		t.Fatal(err)
	}
	reg.restart()
	for _, ref := range []string{reg.ref("anepack/tiny:v1"), reg.ref("anepack/tiny@" + pushed.Ref.Digest)} {
		popts, _ := testOptions(t)
		p, err := Pull(ctx, ref, popts)
		if err != nil {
			t.Fatalf("%s after the restart: %v", ref, err)
		}
		sameFile(t, bundle, p.Path)
	}
}
