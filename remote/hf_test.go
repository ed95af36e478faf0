package remote

import (
	"context"
	"strings"
	"testing"

	"github.com/anepack/anepack/hub"
	"github.com/anepack/anepack/hub/hubtest"
	"github.com/anepack/anepack/store"
)

const hfToken = "hf_testwritetoken0123456789"

func hfOptions(t *testing.T, up *hubtest.Uploads, token string) (Options, *logWriter) {
	opts, lw := testOptions(t)
	opts.Hub = &hub.Client{Endpoint: up.URL, Token: token, CacheDir: t.TempDir()}
	return opts, lw
}

// TestHFPushPull pushes a bundle to the fake Hub through the upload API (multipart, with a
// failing part) and pulls it back with the hub client: byte-identical.
func TestHFPushPull(t *testing.T) {
	ctx := context.Background()
	bundle := tinyBundle(t)
	srv := hubtest.New(t, hubtest.Options{Tokens: []string{hfToken}})
	up := hubtest.NewUploads(t, srv, hubtest.UploadOptions{MultipartThreshold: 8 << 20, ChunkSize: 4 << 20, Verify: true, FailParts: 1})

	opts, lw := hfOptions(t, up, hfToken)
	pushed, err := Push(ctx, bundle, "hf://anepack/tiny-model", opts)
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := store.HashFile(ctx, bundle, nil)
	if pushed.BundleDigest != want || pushed.Uploaded != pushed.Size || pushed.Commit == "" || pushed.Ref.Path != "tiny.aneb" {
		t.Fatalf("push: %+v", pushed)
	}
	if !strings.Contains(lw.String(), "retrying") {
		t.Error("the failed part was not retried")
	}
	if n := up.StorageAuthViolations(); n != 0 {
		t.Errorf("the token was sent to the storage server %d times", n)
	}
	info, ok := srv.Blob("anepack/tiny-model", "main", "tiny.aneb")
	if !ok || !info.LFS || "sha256:"+info.SHA256 != want {
		t.Fatalf("the Hub holds %+v (found %v)", info, ok)
	}

	// Pull it back, by file and by repo alone.
	for _, ref := range []string{"hf://anepack/tiny-model/tiny.aneb", "hf://anepack/tiny-model"} {
		popts, _ := hfOptions(t, up, hfToken)
		p, err := Pull(ctx, ref, popts)
		if err != nil {
			t.Fatalf("pull %s: %v", ref, err)
		}
		sameFile(t, bundle, p.Path)
		if p.Entry.Digest != want || p.Entry.Reference != ref || p.Entry.Model.Name != "tiny" {
			t.Errorf("pull %s: entry %+v", ref, p.Entry)
		}
	}
	if n := srv.CDNAuthViolations(); n != 0 {
		t.Errorf("the token was sent to the CDN %d times", n)
	}

	// Pushing the same bundle again uploads nothing; a pull at a revision works too.
	again, err := Push(ctx, bundle, "hf://anepack/tiny-model/copy.aneb", opts)
	if err != nil || again.Uploaded != 0 {
		t.Fatalf("second push: %+v, %v", again, err)
	}
	popts, _ := hfOptions(t, up, hfToken)
	p, err := Pull(ctx, "hf://anepack/tiny-model@"+again.Commit+"/copy.aneb", popts)
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, bundle, p.Path)
	// Two bundles in the repo now: the repo alone is ambiguous.
	if _, err := Pull(ctx, "hf://anepack/tiny-model", popts); err == nil || !strings.Contains(err.Error(), "2 bundles") {
		t.Errorf("pull of a repo with two bundles: %v", err)
	}
}

// TestHFPushBasic uploads below the multipart threshold (one PUT) into an existing repo.
func TestHFPushBasic(t *testing.T) {
	ctx := context.Background()
	bundle := tinyBundle(t)
	srv := hubtest.New(t, hubtest.Options{Tokens: []string{hfToken}})
	srv.MustAddRepo(t, hubtest.Repo{ID: "anepack/existing", Files: []hubtest.File{{Path: "README.md", Data: []byte("# hi\n")}}})
	up := hubtest.NewUploads(t, srv, hubtest.UploadOptions{MultipartThreshold: 1 << 40})
	opts, lw := hfOptions(t, up, hfToken)
	opts.Message = "my bundle"
	if _, err := Push(ctx, bundle, "hf://anepack/existing/models/m.aneb", opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(lw.String(), "exists") {
		t.Error("the existing repo was not noticed")
	}
	if _, ok := srv.Blob("anepack/existing", "main", "README.md"); !ok {
		t.Error("the commit dropped the repo's other files")
	}
	popts, _ := hfOptions(t, up, hfToken)
	p, err := Pull(ctx, "hf://anepack/existing/models/m.aneb", popts)
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, bundle, p.Path)
}

func TestHFPushAuth(t *testing.T) {
	ctx := context.Background()
	bundle := tinyBundle(t)
	srv := hubtest.New(t, hubtest.Options{Tokens: []string{hfToken}})
	up := hubtest.NewUploads(t, srv, hubtest.UploadOptions{})
	none, _ := hfOptions(t, up, "")
	if _, err := Push(ctx, bundle, "hf://anepack/x", none); err == nil || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Errorf("push without a token: %v", err)
	}
	const bad = "hf_wrongtoken999"
	wrong, _ := hfOptions(t, up, bad)
	_, err := Push(ctx, bundle, "hf://anepack/x", wrong)
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "HF_TOKEN") || strings.Contains(err.Error(), bad) {
		t.Errorf("push with a wrong token: %v", err)
	}
	if up.Commits() != 0 {
		t.Errorf("%d commits after refused pushes", up.Commits())
	}
}
