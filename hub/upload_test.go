package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anepack/anepack/hub/hubtest"
)

// TestUpload sends a file through the fake Hub's upload API in parts, one of which fails and
// is retried, never with the token on the storage server; the commit makes it downloadable,
// byte-identical. A second upload of the same object sends nothing.
func TestUpload(t *testing.T) {
	const token = "hf_uploadtoken0123456789"
	srv := hubtest.New(t, hubtest.Options{Tokens: []string{token}})
	up := hubtest.NewUploads(t, srv, hubtest.UploadOptions{MultipartThreshold: 1 << 20, ChunkSize: 512 << 10, Verify: true, FailParts: 1})
	data := make([]byte, 3<<20+123)
	for i := range data {
		data[i] = byte(i * 13)
	}
	path := filepath.Join(t.TempDir(), "model.aneb")
	os.WriteFile(path, data, 0o644)
	sum := sha256.Sum256(data)
	c, _ := newClient(t, nil)
	c.Endpoint, c.Token = up.URL, token
	var log strings.Builder
	opts := UploadOptions{Label: "hf://org/m", SHA256: hex.EncodeToString(sum[:]), Jobs: 3, Retries: 2,
		Delay: func(int) time.Duration { return time.Millisecond },
		Logf:  func(format string, args ...any) { fmt.Fprintf(&log, format+"\n", args...) }}
	res, err := c.Upload(context.Background(), "org/m", "", path, "dir/model.aneb", opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != int64(len(data)) || res.Commit == "" || !strings.Contains(log.String(), "retrying") {
		t.Fatalf("upload %+v, log %q", res, log.String())
	}
	if n := up.StorageAuthViolations(); n != 0 {
		t.Errorf("the token went to the storage server %d times", n)
	}
	f, err := c.DownloadFile(context.Background(), "org/m", "main", "dir/model.aneb")
	if err != nil {
		t.Fatal(err)
	}
	mustEqualFile(t, f.LocalPath, data)
	again, err := c.Upload(context.Background(), "org/m", "main", path, "copy.aneb", opts)
	if err != nil || again.Sent != 0 {
		t.Fatalf("second upload %+v, %v", again, err)
	}
}

// TestUploadNeedsToken: without a token, or with one the Hub refuses, nothing is committed and
// the error says what to do, without the token in it.
func TestUploadNeedsToken(t *testing.T) {
	srv := hubtest.New(t, hubtest.Options{Tokens: []string{"hf_good"}})
	up := hubtest.NewUploads(t, srv, hubtest.UploadOptions{})
	path := filepath.Join(t.TempDir(), "f")
	os.WriteFile(path, []byte("x"), 0o644)
	for _, token := range []string{"", "hf_wrongtoken999"} {
		c, _ := newClient(t, nil)
		c.Endpoint, c.Token = up.URL, token
		_, err := c.Upload(context.Background(), "org/m", "", path, "f", UploadOptions{Label: "hf://org/m"})
		if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "HF_TOKEN") || (token != "" && strings.Contains(err.Error(), token)) {
			t.Errorf("token %q: %v", token, err)
		}
	}
	if up.Commits() != 0 {
		t.Errorf("%d commits", up.Commits())
	}
}
