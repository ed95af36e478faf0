package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anepack/anepack/internal/fileutil"
)

// blob writes random bytes into the store's work area and returns the file and its digest.
func blob(t *testing.T, s *Store, n int, seed uint64) (string, string) {
	t.Helper()
	data := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 7))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	f, err := os.CreateTemp(s.TempDir(), "test-*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
	sum := sha256.Sum256(data)
	return f.Name(), "sha256:" + hex.EncodeToString(sum[:])
}

func openStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestInstallGetList(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	tmp, dg := blob(t, s, 100_000, 1)
	e := Entry{Reference: "oci://r.example/ns/m:v1", Digest: dg, Model: Model{Name: "m", Architecture: "Qwen2ForCausalLM", DType: "f16", Parameters: 42}}
	p, err := s.Install(ctx, tmp, e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp file still there after install: %v", err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o444 || fi.Size() != 100_000 {
		t.Errorf("blob mode %v size %d, want 0444 and 100000", fi.Mode().Perm(), fi.Size())
	}
	got, path, err := s.Get(ctx, e.Reference, nil)
	if err != nil {
		t.Fatal(err)
	}
	if path != p || got.Digest != dg || got.Size != 100_000 || got.Model != e.Model || got.PulledAt.IsZero() {
		t.Errorf("Get = %+v %s", got, path)
	}
	if _, err := s.Lookup("oci://r.example/ns/m:v2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Lookup of an unknown ref: %v, want ErrNotFound", err)
	}
	// A second reference to the same bundle, and an unnamed blob.
	if err := s.SetRef(ctx, Entry{Reference: "https://h.example/m.aneb", Digest: dg, Size: 100_000}); err != nil {
		t.Fatal(err)
	}
	tmp2, dg2 := blob(t, s, 5000, 2)
	if _, err := s.Install(ctx, tmp2, Entry{Digest: dg2}); err != nil {
		t.Fatal(err)
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, e := range list {
		refs = append(refs, e.Reference+"="+e.Digest[:13])
	}
	want := []string{"https://h.example/m.aneb=" + dg[:13], "oci://r.example/ns/m:v1=" + dg[:13], "=" + dg2[:13]}
	if strings.Join(refs, " ") != strings.Join(want, " ") {
		t.Errorf("List = %v, want %v", refs, want)
	}
	if err := s.SetRef(ctx, Entry{Reference: "x", Digest: "sha256:" + strings.Repeat("0", 64)}); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetRef to a missing blob: %v, want ErrNotFound", err)
	}
}

func TestInstallWrongDigest(t *testing.T) {
	s := openStore(t)
	tmp, _ := blob(t, s, 1000, 1)
	_, other := blob(t, s, 1000, 2)
	_, err := s.Install(context.Background(), tmp, Entry{Reference: "r", Digest: other})
	if err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Fatalf("Install with the wrong digest: %v", err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("rejected file left in the work area")
	}
	if s.Has(other) {
		t.Errorf("blob installed under a digest it does not have")
	}
	if _, err := s.Lookup("r"); !errors.Is(err, ErrNotFound) {
		t.Errorf("reference recorded for a rejected install: %v", err)
	}
	if _, err := s.InstallHashed(context.Background(), filepath.Join(t.TempDir(), "x"), Entry{Digest: other}); err == nil {
		t.Errorf("InstallHashed accepted a file outside the work area")
	}
}

func TestVerifyDeletesCorrupt(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	tmp, dg := blob(t, s, 300_000, 3)
	p, err := s.Install(ctx, tmp, Entry{Reference: "ref", Digest: dg})
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	if _, err := s.Verify(ctx, dg, func(done, total int64) { calls++ }); err != nil || calls == 0 {
		t.Fatalf("Verify of an intact blob: %v (progress calls %d)", err, calls)
	}
	// Flip one byte in the middle, as a disk error or a stray write would.
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := []byte{0}
	f.ReadAt(b, 150_000)
	b[0] ^= 0x40
	f.WriteAt(b, 150_000)
	f.Close()
	_, _, err = s.Get(ctx, "ref", nil)
	var ce *CorruptError
	if !errors.As(err, &ce) || !ce.Deleted || ce.Digest != dg || ce.Got == dg {
		t.Fatalf("Get of a corrupt blob: %v", err)
	}
	if !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), "deleted") {
		t.Errorf("error does not say what happened: %v", err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("corrupt blob still present")
	}
	list, _ := s.List()
	if len(list) != 1 || !list[0].Missing {
		t.Errorf("List after deletion = %+v, want the ref marked missing", list)
	}
	if _, _, err := s.Get(ctx, "ref", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after deletion: %v, want ErrNotFound", err)
	}
}

func TestRemove(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	tmpA, a := blob(t, s, 2000, 1)
	tmpB, b := blob(t, s, 3000, 2)
	if _, err := s.Install(ctx, tmpA, Entry{Reference: "a1", Digest: a}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRef(ctx, Entry{Reference: "a2", Digest: a}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Install(ctx, tmpB, Entry{Reference: "b", Digest: b}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Remove(ctx, "a1")
	if err != nil || len(r.Refs) != 1 || len(r.Blobs) != 0 {
		t.Fatalf("Remove a1 = %+v, %v; want the ref only (a2 still names the blob)", r, err)
	}
	if !s.Has(a) {
		t.Fatal("blob removed while a2 names it")
	}
	r, err = s.Remove(ctx, "a2")
	if err != nil || len(r.Blobs) != 1 || r.Freed != 2000 || s.Has(a) {
		t.Fatalf("Remove a2 = %+v, %v; want the blob deleted", r, err)
	}
	if _, err := s.Remove(ctx, "a2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Remove: %v, want ErrNotFound", err)
	}
	if _, err := s.Remove(ctx, "sha256:"+b[7:9]); err == nil || !strings.Contains(err.Error(), "at least 6") {
		t.Errorf("Remove by a 2-digit prefix: %v", err)
	}
	if _, err := s.Remove(ctx, "sha256:zzzzzzzz"); err == nil {
		t.Errorf("Remove by a non-hex prefix succeeded")
	}
	r, err = s.Remove(ctx, b[:15])
	if err != nil || len(r.Refs) != 1 || r.Refs[0].Reference != "b" || len(r.Blobs) != 1 || s.Has(b) {
		t.Fatalf("Remove by digest prefix = %+v, %v", r, err)
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Errorf("store not empty: %+v", list)
	}
}

func TestRemoveAmbiguousPrefix(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	// Find two blobs whose digests share 6 hex digits: plant them by name (List reads names).
	for _, h := range []string{"abcdef" + strings.Repeat("0", 58), "abcdef" + strings.Repeat("1", 58)} {
		if err := os.WriteFile(filepath.Join(s.blobDir(), h), []byte("x"), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Remove(ctx, "sha256:abcdef"); !errors.Is(err, ErrAmbiguous) {
		t.Errorf("Remove of an ambiguous prefix: %v", err)
	}
	if _, err := s.Remove(ctx, "sha256:abcdef1"); err != nil {
		t.Errorf("Remove of a unique prefix: %v", err)
	}
}

func TestRefFileName(t *testing.T) {
	cases := map[string]string{
		"oci://r/ns/m:v1":           "oci%3A%2F%2Fr%2Fns%2Fm%3Av1",
		"hf://Org/Repo@main/x.aneb": "hf%3A%2F%2FOrg%2FRepo%40main%2Fx.aneb",
		".hidden":                   "%2Ehidden",
	}
	for in, want := range cases {
		if got := refFileName(in); got != want {
			t.Errorf("refFileName(%q) = %q, want %q", in, got, want)
		}
	}
	long1 := "https://h/" + strings.Repeat("a", 300) + "1"
	long2 := "https://h/" + strings.Repeat("a", 300) + "2"
	n1, n2 := refFileName(long1), refFileName(long2)
	if len(n1) > maxRefName || n1 == n2 {
		t.Errorf("long names: %d bytes, equal %v", len(n1), n1 == n2)
	}
	s := openStore(t)
	tmp, dg := blob(t, s, 10, 1)
	if _, err := s.Install(context.Background(), tmp, Entry{Reference: long1, Digest: dg}); err != nil {
		t.Fatal(err)
	}
	if e, err := s.Lookup(long1); err != nil || e.Reference != long1 {
		t.Errorf("Lookup of a long reference: %+v %v", e, err)
	}
	if _, err := s.Lookup(long2); !errors.Is(err, ErrNotFound) {
		t.Errorf("Lookup of another long reference: %v", err)
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv(EnvHome, "/x/y")
	if d, _ := DefaultDir(); d != "/x/y" {
		t.Errorf("DefaultDir with %s set = %q", EnvHome, d)
	}
	t.Setenv(EnvHome, "")
	t.Setenv("XDG_CACHE_HOME", "/c")
	if d, _ := DefaultDir(); d != "/c/anepack" {
		t.Errorf("DefaultDir with XDG_CACHE_HOME = %q", d)
	}
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "/h")
	if d, _ := DefaultDir(); d != "/h/.cache/anepack" {
		t.Errorf("DefaultDir = %q", d)
	}
}

func TestPartLockAndRemoveTemp(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	p, err := s.OpenPart(ctx, "abc123", nil)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p.Path, make([]byte, 4096), 0o644)
	os.WriteFile(p.StatePath, []byte("{}"), 0o644)
	// A second holder waits; it gives up when its context ends.
	waited := false
	cctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	if _, err := s.OpenPart(cctx, "abc123", func() { waited = true }); !errors.Is(err, context.DeadlineExceeded) || !waited {
		t.Fatalf("second OpenPart: %v (waited %v), want a wait then the deadline", err, waited)
	}
	// RemoveTemp leaves a held part alone...
	if freed, _ := s.RemoveTemp(); freed != 0 {
		t.Errorf("RemoveTemp freed %d bytes of a part in use", freed)
	}
	p.Close()
	// ...and deletes it once released.
	if freed, _ := s.RemoveTemp(); freed != 4096+2 {
		t.Errorf("RemoveTemp freed %d bytes, want %d", freed, 4096+2)
	}
	if _, err := s.OpenPart(ctx, "ABC", nil); err == nil {
		t.Errorf("OpenPart accepted an invalid key")
	}
}

func TestCheckSpace(t *testing.T) {
	s := openStore(t)
	free, ok := s.FreeSpace()
	if !ok || free <= 0 {
		t.Fatalf("FreeSpace = %d, %v", free, ok)
	}
	err := s.CheckSpace(free + 1<<40)
	if !errors.Is(err, ErrDiskFull) || !IsDiskFull(err) || !strings.Contains(err.Error(), EnvHome) {
		t.Errorf("CheckSpace of more than is free: %v", err)
	}
	if err := s.CheckSpace(1); err != nil {
		t.Errorf("CheckSpace(1): %v", err)
	}
}

func TestParseDigest(t *testing.T) {
	good := "sha256:" + strings.Repeat("0a", 32)
	if h, err := ParseDigest(good); err != nil || h != strings.Repeat("0a", 32) {
		t.Errorf("ParseDigest(%q) = %q, %v", good, h, err)
	}
	for _, bad := range []string{"", "sha256", "sha256:", "sha512:" + strings.Repeat("0", 128), "sha256:" + strings.Repeat("A", 64), "sha256:" + strings.Repeat("0", 63)} {
		if _, err := ParseDigest(bad); err == nil {
			t.Errorf("ParseDigest(%q) accepted", bad)
		}
	}
}

// TestInstallFrom links a file from elsewhere (through a symlink, as in the Hugging Face
// cache) and copies one when it must.
func TestInstallFrom(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	other := t.TempDir()
	data := []byte(strings.Repeat("bundle bytes ", 1000))
	sum := sha256.Sum256(data)
	dg := "sha256:" + hex.EncodeToString(sum[:])
	blobPath := filepath.Join(other, "blob")
	os.WriteFile(blobPath, data, 0o644)
	link := filepath.Join(other, "snapshot-file")
	if err := os.Symlink("blob", link); err != nil {
		t.Fatal(err)
	}
	p, err := s.InstallFrom(ctx, link, Entry{Reference: "hf://o/r/x.aneb", Digest: dg})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(data)) {
		t.Fatalf("installed %v, %v: want a regular file", fi, err)
	}
	if src, _ := os.Stat(blobPath); !os.SameFile(src, fi) {
		t.Errorf("not a hard link of the source on the same file system")
	}
	// The wrong digest: refused, nothing installed.
	if _, err := s.InstallFrom(ctx, link, Entry{Reference: "r2", Digest: "sha256:" + strings.Repeat("1", 64)}); err == nil {
		t.Error("InstallFrom accepted content that does not match the digest")
	}
	// The copy path (used across file systems).
	tmp := filepath.Join(s.TempDir(), "copy-test")
	if err := fileutil.CopyFile(ctx, blobPath, tmp); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Install(ctx, tmp, Entry{Reference: "copied", Digest: dg}); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.List(); len(list) != 2 {
		t.Errorf("List: %+v", list)
	}
}

// TestRefMoves re-points a reference (a tag that moved): the bundle it named before is
// deleted unless another reference still names it.
func TestRefMoves(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	tmpA, a := blob(t, s, 1000, 1)
	tmpB, b := blob(t, s, 1000, 2)
	tmpC, c := blob(t, s, 1000, 3)
	if _, err := s.Install(ctx, tmpA, Entry{Reference: "oci://r/m:latest", Digest: a}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Install(ctx, tmpB, Entry{Reference: "oci://r/m:latest", Digest: b}); err != nil {
		t.Fatal(err)
	}
	if s.Has(a) || !s.Has(b) {
		t.Fatalf("after the tag moved: has old %v, new %v; want only the new bundle", s.Has(a), s.Has(b))
	}
	if err := s.SetRef(ctx, Entry{Reference: "oci://r/m:v1", Digest: b}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Install(ctx, tmpC, Entry{Reference: "oci://r/m:latest", Digest: c}); err != nil {
		t.Fatal(err)
	}
	if !s.Has(b) || !s.Has(c) {
		t.Fatalf("a bundle still named by v1 was deleted")
	}
	if e, _ := s.Lookup("oci://r/m:latest"); e.Digest != c {
		t.Errorf("latest names %s, want %s", e.Digest, c)
	}
}

// TestVerifyStamp checks that a verified blob is not hashed again while unchanged, and that a
// blob changed after verification (new modification time) is hashed, found corrupt and deleted.
func TestVerifyStamp(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	tmp, digest := blob(t, s, 4096, 99)
	p, err := s.Install(ctx, tmp, Entry{Digest: digest, Reference: "https://example.com/x.aneb"})
	if err != nil {
		t.Fatal(err)
	}
	hashed := func() bool {
		var called bool
		if _, err := s.Verify(ctx, digest, func(done, total int64) { called = true }); err != nil {
			t.Fatal(err)
		}
		return called
	}
	if !hashed() {
		t.Error("a blob modified moments ago was trusted without hashing")
	}
	// An hour later (as far as the file system says) the first Verify hashes and stamps, and the
	// next one trusts the stamp.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	if !hashed() {
		t.Error("an unstamped blob was not hashed")
	}
	if hashed() {
		t.Error("a stamped, unchanged blob was hashed again")
	}
	// Corrupt the blob in place; the write moves its modification time.
	os.Chmod(p, 0o644)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xFF, 0xFE}, 100)
	f.Close()
	var ce *CorruptError
	if _, err := s.Verify(ctx, digest, nil); !errors.As(err, &ce) || !ce.Deleted {
		t.Fatalf("Verify of a modified blob: %v", err)
	}
	if _, err := os.Stat(s.stampPath(digest)); !os.IsNotExist(err) {
		t.Error("the stamp of a deleted blob remains")
	}
}
