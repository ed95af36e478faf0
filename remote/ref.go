package remote

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"oras.land/oras-go/v2/registry"

	"github.com/anepack/anepack/store"
)

// Kind is the transport a reference names.
type Kind int

const (
	// Local is a path on this machine.
	Local Kind = iota
	// OCI is an artifact in an OCI (Docker v2) registry: oci://registry/ns/name:tag[@sha256:…].
	OCI
	// HF is a file in a Hugging Face Hub repo: hf://org/repo[@rev]/file.aneb.
	HF
	// HTTPS is a plain URL: https://host/path/model.aneb (http:// is accepted too).
	HTTPS
)

func (k Kind) String() string {
	switch k {
	case Local:
		return "local"
	case OCI:
		return "oci"
	case HF:
		return "hf"
	case HTTPS:
		return "https"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// DefaultTag is the tag of an oci:// reference that names none.
const DefaultTag = "latest"

// Ref is a parsed bundle reference. One syntax names a bundle everywhere:
//
//	oci://registry.example.com[:port]/ns/name[:tag][@sha256:<hex>]   tag defaults to "latest"
//	hf://org/repo[@revision][/path/in/repo.aneb]                     revision defaults to "main"
//	https://host/path/model.aneb                                     (http:// too; digest given apart)
//	./model.aneb, /abs/model.aneb, model.aneb                         a local file
//
// An hf:// revision that contains '/' (refs/pr/1) is written URL-escaped: refs%2Fpr%2F1.
type Ref struct {
	Kind Kind
	// Registry ("host[:port]"), Repository ("ns/name"), Tag and Digest, for OCI. Digest may
	// be set with or without Tag; a pull by digest ignores the tag.
	Registry, Repository, Tag, Digest string
	// Repo ("org/name"), Revision and Path (the file in the repo; empty when the reference
	// names only the repo, as `anepack push x.aneb hf://org/repo` may), for HF.
	Repo, Revision, Path string
	// URL, for HTTPS.
	URL string
	// File is the path, for Local.
	File string
}

var (
	hfPart   = regexp.MustCompile(`^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?$`)
	schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)
)

// ParseRef parses a reference; the error says what part is wrong and what was expected.
func ParseRef(s string) (Ref, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Ref{}, errors.New("empty bundle reference")
	}
	m := schemeRE.FindString(s)
	if m == "" {
		return Ref{Kind: Local, File: s}, nil
	}
	switch strings.ToLower(m) {
	case "oci://":
		return parseOCI(s, s[len(m):])
	case "hf://":
		return parseHF(s, s[len(m):])
	case "https://", "http://":
		return parseHTTPS(s)
	case "file://":
		u, err := url.Parse(s)
		if err != nil || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
			return Ref{}, fmt.Errorf("reference %q: expected file:///absolute/path", s)
		}
		return Ref{Kind: Local, File: u.Path}, nil
	}
	return Ref{}, fmt.Errorf("reference %q: unknown scheme %q; expected oci://, hf://, https:// or a local path", s, strings.TrimSuffix(m, "://"))
}

func parseOCI(orig, rest string) (Ref, error) {
	bad := func(format string, args ...any) (Ref, error) {
		return Ref{}, fmt.Errorf("reference %q: "+format+"; expected oci://registry.example.com/ns/name:tag or oci://registry/ns/name@sha256:<64 hex>", append([]any{orig}, args...)...)
	}
	host, p, ok := strings.Cut(rest, "/")
	if !ok || host == "" || p == "" {
		return bad("no repository after the registry host")
	}
	r := Ref{Kind: OCI, Registry: host}
	if i := strings.Index(p, "@"); i >= 0 {
		r.Digest = p[i+1:]
		p = p[:i]
		if _, err := store.ParseDigest(r.Digest); err != nil {
			return bad("%v", err)
		}
	}
	// The tag follows the last ':' after the last '/'.
	if i := strings.LastIndex(p, ":"); i > strings.LastIndex(p, "/") {
		r.Tag = p[i+1:]
		p = p[:i]
		if r.Tag == "" {
			return bad("empty tag after ':'")
		}
	}
	r.Repository = p
	rr := registry.Reference{Registry: r.Registry, Repository: r.Repository, Reference: r.Tag}
	if err := rr.ValidateRegistry(); err != nil {
		return bad("invalid registry host %q", r.Registry)
	}
	if err := rr.ValidateRepository(); err != nil {
		return bad("invalid repository name %q (lowercase letters, digits and . _ - separated by /)", r.Repository)
	}
	if r.Tag != "" {
		if err := rr.ValidateReferenceAsTag(); err != nil {
			return bad("invalid tag %q (letters, digits, _ . -, at most 128, not starting with . or -)", r.Tag)
		}
	}
	if r.Tag == "" && r.Digest == "" {
		r.Tag = DefaultTag
	}
	return r, nil
}

func parseHF(orig, rest string) (Ref, error) {
	bad := func(format string, args ...any) (Ref, error) {
		return Ref{}, fmt.Errorf("reference %q: "+format+"; expected hf://org/repo[@revision]/file.aneb", append([]any{orig}, args...)...)
	}
	segs := strings.Split(rest, "/")
	if len(segs) < 2 || segs[0] == "" || segs[1] == "" {
		return bad("expected an org and a repo name")
	}
	org, name := segs[0], segs[1]
	r := Ref{Kind: HF, Revision: "main"}
	if n, rev, ok := strings.Cut(name, "@"); ok {
		name = n
		r.Revision = rev
		if rev == "" {
			return bad("empty revision after '@'")
		}
		if u, err := url.PathUnescape(rev); err == nil {
			r.Revision = u
		} else {
			return bad("revision %q is not validly escaped", rev)
		}
	}
	if !hfPart.MatchString(org) || !hfPart.MatchString(name) || strings.Contains(org+name, "..") || len(org)+1+len(name) > 96 {
		return bad("invalid repo id %q (letters, digits, - _ ., at most 96 characters)", org+"/"+name)
	}
	r.Repo = org + "/" + name
	if len(segs) > 2 {
		r.Path = strings.Join(segs[2:], "/")
		if r.Path != "" && path.Clean(r.Path) != r.Path || strings.HasPrefix(r.Path, "../") || strings.Contains(r.Path, "//") {
			return bad("invalid file path %q in the repo", r.Path)
		}
	}
	return r, nil
}

func parseHTTPS(orig string) (Ref, error) {
	u, err := url.Parse(orig)
	if err != nil {
		return Ref{}, fmt.Errorf("reference %q: %v", orig, err)
	}
	if u.Host == "" {
		return Ref{}, fmt.Errorf("reference %q: no host; expected https://host/path/model.aneb", orig)
	}
	if u.Path == "" || strings.HasSuffix(u.Path, "/") {
		return Ref{}, fmt.Errorf("reference %q: no file in the URL; expected https://host/path/model.aneb", orig)
	}
	if u.User != nil {
		return Ref{}, fmt.Errorf("reference %q: credentials in a URL are not accepted (they would be stored in the reference)", orig)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Fragment = ""
	return Ref{Kind: HTTPS, URL: u.String()}, nil
}

// String is the canonical form, used as the store's name for what was pulled.
func (r Ref) String() string {
	switch r.Kind {
	case OCI:
		s := "oci://" + r.Registry + "/" + r.Repository
		if r.Tag != "" {
			s += ":" + r.Tag
		}
		if r.Digest != "" {
			s += "@" + r.Digest
		}
		return s
	case HF:
		s := "hf://" + r.Repo
		if r.Revision != "" && r.Revision != "main" {
			s += "@" + url.PathEscape(r.Revision)
		}
		if r.Path != "" {
			s += "/" + r.Path
		}
		return s
	case HTTPS:
		return r.URL
	}
	return r.File
}

// IsRemote reports whether the reference names something to download.
func (r Ref) IsRemote() bool { return r.Kind != Local }
