package acquire

import (
	"fmt"
	"path"

	"github.com/anepack/anepack/format"
	"github.com/anepack/anepack/hub"
)

// Source is a checkpoint directory ready for pack.Pack, with what is known of its origin.
type Source struct {
	// Dir is the checkpoint directory (a snapshot folder of the Hugging Face cache for a repo).
	Dir string
	// Name is the model name for the manifest and the default output file; "" means the
	// directory's name.
	Name       string
	Provenance format.Provenance
	// KnownDigests are the sha256 of files the Hub client verified, so packing need not hash
	// them again.
	KnownDigests map[string]string
	// Origin says where it came from in a store listing: "Org/Name@<commit>".
	Origin string
}

// FromSnapshot is the Source for a repo snapshot: the model is named after the repo's name
// (the snapshot folder is named by the commit), and the provenance records the repo, the
// revision asked and the commit it resolved to.
func FromSnapshot(s *hub.Snapshot) (*Source, error) {
	if err := CheckCheckpoint(s); err != nil {
		return nil, err
	}
	src := &Source{
		Dir:          s.Dir,
		Name:         path.Base(s.Repo),
		Provenance:   format.Provenance{Source: "hf", Repo: s.Repo, Revision: s.Revision, Commit: s.Commit},
		KnownDigests: map[string]string{},
		Origin:       s.Repo + "@" + shortCommit(s.Commit),
	}
	for _, f := range s.Files {
		src.KnownDigests[f.Path] = f.SHA256
	}
	return src, nil
}

// CheckCheckpoint refuses a repo that has no config.json at its top level: it is not a
// transformers checkpoint (a GGUF-only repo, an adapter, a dataset mirrored as a model), and
// packing would otherwise fail on a snapshot folder that was never created.
func CheckCheckpoint(s *hub.Snapshot) error {
	if _, ok := s.File("config.json"); ok {
		return nil
	}
	return fmt.Errorf("%s at %s has no config.json, so it is not a transformers checkpoint anepack can pack (`anepack ls %s` lists its files)",
		s.Repo, shortCommit(s.Commit), s.Repo)
}

func shortCommit(c string) string { return c[:min(12, len(c))] }
