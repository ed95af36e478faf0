package remote

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The OCI tests run Debian's docker-registry (distribution v2.8) on loopback: a real
// registry, started and stopped by the test. `make test` installs it with
// `apt-get install -y docker-registry apache2-utils` (apache2-utils provides htpasswd,
// the only way distribution accepts passwords: bcrypt in an htpasswd file).

const (
	regUser = "anepack"
	regPass = "s3cret-pass"
)

// testRegistry is one docker-registry process with its storage in a temp dir.
type testRegistry struct {
	t       testing.TB
	bin     string
	dir     string // storage root
	config  string
	addr    string // 127.0.0.1:port
	cmd     *exec.Cmd
	log     *lockedBuffer
	exited  chan struct{}
	withPwd bool
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func findRegistry(t testing.TB) string {
	t.Helper()
	for _, p := range []string{os.Getenv("ANEPACK_TEST_REGISTRY"), "docker-registry", "/usr/bin/docker-registry"} {
		if p == "" {
			continue
		}
		if bin, err := exec.LookPath(p); err == nil {
			return bin
		}
	}
	t.Fatalf("docker-registry is not installed; the OCI tests need a real registry: apt-get install -y docker-registry apache2-utils (or set ANEPACK_TEST_REGISTRY to a distribution binary)")
	return ""
}

// startRegistry starts a registry on a free loopback port; withPwd protects it with a
// password (regUser / regPass).
func startRegistry(t testing.TB, withPwd bool) *testRegistry {
	t.Helper()
	r := &testRegistry{t: t, bin: findRegistry(t), dir: t.TempDir(), log: &lockedBuffer{}, withPwd: withPwd}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = l.Addr().String()
	l.Close()
	auth := ""
	if withPwd {
		htp, err := exec.LookPath("htpasswd")
		if err != nil {
			t.Fatalf("htpasswd is not installed; the registry auth tests need it: apt-get install -y apache2-utils")
		}
		out, err := exec.Command(htp, "-Bbn", regUser, regPass).Output()
		if err != nil {
			t.Fatalf("htpasswd: %v", err)
		}
		pw := filepath.Join(r.dir, "htpasswd")
		if err := os.WriteFile(pw, out, 0o600); err != nil {
			t.Fatal(err)
		}
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: anepack-test\n    path: %s\n", pw)
	}
	r.config = filepath.Join(r.dir, "config.yml")
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
  secret: anepack-test-secret
%s`, filepath.Join(r.dir, "data"), r.addr, auth)
	if err := os.WriteFile(r.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *testRegistry) start() {
	r.t.Helper()
	r.cmd = exec.Command(r.bin, "serve", r.config)
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("starting %s: %v", r.bin, err)
	}
	r.exited = make(chan struct{})
	go func(c *exec.Cmd, ch chan struct{}) { c.Wait(); close(ch) }(r.cmd, r.exited)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + r.addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return
			}
		}
		select {
		case <-r.exited:
			r.t.Fatalf("docker-registry exited at start:\n%s", r.log)
		case <-time.After(50 * time.Millisecond):
		}
	}
	r.t.Fatalf("docker-registry did not answer on %s within 15s:\n%s", r.addr, r.log)
}

func (r *testRegistry) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(5 * time.Second):
		r.cmd.Process.Kill()
		<-r.exited
	}
	r.cmd = nil
}

// restart stops the registry and starts it again on the same port and storage.
func (r *testRegistry) restart() {
	r.t.Helper()
	r.stop()
	r.start()
}

// ref is an oci:// reference to repo:tag on this registry.
func (r *testRegistry) ref(repoTag string) string { return "oci://" + r.addr + "/" + repoTag }

// blobFile is where the registry stores a blob (to corrupt it).
func (r *testRegistry) blobFile(digest string) string {
	hex := strings.TrimPrefix(digest, "sha256:")
	return filepath.Join(r.dir, "data", "docker", "registry", "v2", "blobs", "sha256", hex[:2], hex, "data")
}
