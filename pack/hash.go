package pack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"

	"github.com/anepack/anepack/convert"
	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/internal/regfile"
)

// sourceFiles lists the checkpoint files recorded in the provenance, relative to dir.
func sourceFiles(dir string, c *convert.Checkpoint) []string {
	names := []string{ConfigFile, GenerationConfigFile, TokenizerFile, TokenizerConfigFile, ChatTemplateFile, convert.IndexFile}
	if _, err := os.Stat(filepath.Join(dir, TokenizerFile)); err != nil {
		// Without tokenizer.json, packing reads the GPT-2-style files instead.
		names = append(names, VocabFile, MergesFile, SpecialTokensMapFile)
	}
	names = append(names, c.Files...)
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if st, err := os.Stat(filepath.Join(dir, n)); err == nil && st.Mode().IsRegular() {
			out = append(out, n)
		}
	}
	return out
}

// hashJob hashes source files in the background.
type hashJob struct {
	done  chan struct{}
	files []format.SourceFile
	err   error
}

// startHashing computes each file's sha256 (unless known) on its own goroutine. Reading goes
// through the page cache with read(2), so it does not grow this process's resident set.
func startHashing(ctx context.Context, dir string, names []string, known map[string]string) *hashJob {
	j := &hashJob{done: make(chan struct{})}
	go func() {
		defer close(j.done)
		for _, n := range names {
			path := filepath.Join(dir, n)
			st, err := os.Stat(path)
			if err != nil {
				j.err = err
				return
			}
			sum := known[n]
			if sum == "" {
				if sum, err = hashFile(ctx, path); err != nil {
					j.err = err
					return
				}
			}
			j.files = append(j.files, format.SourceFile{Name: n, Size: st.Size(), SHA256: sum})
		}
	}()
	return j
}

func (j *hashJob) wait() ([]format.SourceFile, error) {
	<-j.done
	return j.files, j.err
}

func hashFile(ctx context.Context, path string) (string, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, err := f.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
