package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// EnvHome names the environment variable that moves the store.
const EnvHome = "ANEPACK_HOME"

// Store is an opened store directory. It is safe for concurrent use by several goroutines
// and several processes (see the package documentation).
type Store struct {
	dir string
	// Log, if set, receives one line per notable event: a corrupt blob deleted, a wait for
	// another process. Set it before use.
	Log io.Writer

	logMu sync.Mutex
}

// DefaultDir is $ANEPACK_HOME if set, else $XDG_CACHE_HOME/anepack, else ~/.cache/anepack.
func DefaultDir() (string, error) {
	if v := strings.TrimSpace(os.Getenv(EnvHome)); v != "" {
		if v == "~" || strings.HasPrefix(v, "~/") {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("store: cannot expand %s=%s: %w", EnvHome, v, err)
			}
			v = filepath.Join(home, strings.TrimPrefix(v, "~"))
		}
		return v, nil
	}
	if xdg := strings.TrimSpace(os.Getenv("XDG_CACHE_HOME")); xdg != "" && filepath.IsAbs(xdg) {
		return filepath.Join(xdg, "anepack"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("store: cannot find the home directory (%v): set %s", err, EnvHome)
	}
	return filepath.Join(home, ".cache", "anepack"), nil
}

// OpenDefault opens the store at DefaultDir.
func OpenDefault() (*Store, error) {
	dir, err := DefaultDir()
	if err != nil {
		return nil, err
	}
	return Open(dir)
}

// Open opens (creating if needed) the store in dir.
func Open(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("store: empty directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", dir, err)
	}
	s := &Store{dir: abs}
	for _, d := range []string{s.blobDir(), s.refDir(), s.TempDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, diskErr(fmt.Errorf("store: cannot create %s: %w", d, err), d)
		}
	}
	return s, nil
}

// OpenReadOnly opens the existing store in dir for reading (List, Has, Entry): it creates
// nothing, so it works on a read-only file system, and a store that does not exist yet is
// an error wrapping fs.ErrNotExist (listing one means listing nothing).
func OpenReadOnly(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("store: empty directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case err != nil:
		return nil, fmt.Errorf("store: %w", err)
	case !fi.IsDir():
		return nil, fmt.Errorf("store: %s is not a directory", abs)
	}
	return &Store{dir: abs}, nil
}

// Dir is the store's root directory.
func (s *Store) Dir() string { return s.dir }

// TempDir is the store's work area, on the same file system as the blobs so that an
// install is a rename. Downloads keep their partial files here.
func (s *Store) TempDir() string { return filepath.Join(s.dir, "tmp") }

func (s *Store) blobDir() string  { return filepath.Join(s.dir, "blobs", "sha256") }
func (s *Store) refDir() string   { return filepath.Join(s.dir, "refs") }
func (s *Store) lockPath() string { return filepath.Join(s.dir, "lock") }

// BlobPath is where the blob with the given digest lives (whether or not it is present).
// The digest must be valid (see ParseDigest).
func (s *Store) BlobPath(digest string) (string, error) {
	hex, err := ParseDigest(digest)
	if err != nil {
		return "", err
	}
	return filepath.Join(s.blobDir(), hex), nil
}

// Has reports whether the blob is present (not whether it is intact; see Verify).
func (s *Store) Has(digest string) bool {
	p, err := s.BlobPath(digest)
	if err != nil {
		return false
	}
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func (s *Store) logf(format string, args ...any) {
	if s.Log == nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.Log, "store: "+format+"\n", args...)
}
