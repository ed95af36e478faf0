package hub

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// repoPartRE is one segment of a repo id: Hugging Face allows word characters,
// '-' and '.', starting and ending with a word character
// (huggingface_hub's REPO_ID_REGEX is `^(\b[\w\-.]+\b/)?\b[\w\-.]+\b$`).
var repoPartRE = regexp.MustCompile(`^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?$`)

// maxRepoIDLen is the Hub's limit on the length of a repo id.
const maxRepoIDLen = 96

// IsRepoID reports whether s has the shape of a Hugging Face model id,
// "Org/Name". It looks at the shape only: a local directory named like
// "models/qwen" also matches, so a caller that accepts both should check the
// file system first and treat s as a repo id only when no such path exists.
func IsRepoID(s string) bool {
	org, name, ok := strings.Cut(s, "/")
	if !ok {
		return false
	}
	return len(s) <= maxRepoIDLen && validRepoPart(org) && validRepoPart(name)
}

func validRepoPart(p string) bool {
	return repoPartRE.MatchString(p) && !strings.Contains(p, "--") && !strings.Contains(p, "..")
}

// checkRepoID accepts "Org/Name" and the legacy single-segment ids ("gpt2").
// The id becomes part of URLs and of the cache folder name, so anything that
// could escape either is refused.
func checkRepoID(repo string) error {
	if repo == "" {
		return fmt.Errorf("hub: empty repo id: expected Org/Name, e.g. Qwen/Qwen2.5-0.5B-Instruct")
	}
	parts := strings.Split(repo, "/")
	ok := len(parts) <= 2 && len(repo) <= maxRepoIDLen
	for _, p := range parts {
		ok = ok && validRepoPart(p)
	}
	if !ok {
		return fmt.Errorf("hub: invalid repo id %q: expected Org/Name made of letters, digits, '-', '_' and '.' (at most %d characters, no '--' or '..')", repo, maxRepoIDLen)
	}
	return nil
}

// checkRevision refuses revisions that could escape refs/ in the cache. Branch
// names may contain '/' (refs/pr/1); each segment must be a real name.
func checkRevision(rev string) error {
	bad := rev == "" || len(rev) > 255 || strings.HasPrefix(rev, "/") || strings.HasSuffix(rev, "/")
	for _, r := range rev {
		if r < 0x20 || r == 0x7f || r == '\\' {
			bad = true
		}
	}
	for _, seg := range strings.Split(rev, "/") {
		if seg == "" || seg == "." || seg == ".." {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("hub: invalid revision %q: expected a branch, tag or commit hash (e.g. main, v1.0, refs/pr/1)", rev)
	}
	return nil
}

// isCommitHash reports whether rev is a full 40-hex git commit id.
func isCommitHash(rev string) bool {
	return len(rev) == 40 && isLowerHex(rev)
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return s != ""
}

// checkRepoPath refuses a file name from a server listing that could land
// outside the snapshot folder (absolute, "..", backslashes, empty segments).
// A genuine Hub repo cannot contain such a name (git forbids it), so seeing
// one means the server is broken or hostile, and the whole listing is refused.
func checkRepoPath(p string) error {
	bad := p == "" || len(p) > 4096 || strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\\\x00") ||
		path.Clean(p) != p || strings.Contains(p, ":")
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("%w: refusing file name %q from the server's listing: it is not a plain relative path inside the repository", ErrUnsafePath, p)
	}
	return nil
}

// packFiles are the top-level files packing reads besides the weights.
var packFiles = map[string]bool{
	"config.json":                  true,
	"generation_config.json":       true,
	"tokenizer.json":               true,
	"tokenizer_config.json":        true,
	"special_tokens_map.json":      true,
	"vocab.json":                   true,
	"merges.txt":                   true,
	"model.safetensors.index.json": true,
	// transformers >= 4.43 may keep the chat template out of
	// tokenizer_config.json, in one of these two files.
	"chat_template.jinja": true,
	"chat_template.json":  true,
}

// PackFilter reports whether a repo file is needed to pack a model: the
// config, generation config, tokenizer files, the safetensors weights and
// their index, all at the top level of the repo. It never accepts other
// weight formats (*.bin, *.pth, *.gguf, *.onnx, ...) or anything in a
// sub-folder (onnx/, original/, ...). Mistral's duplicate
// consolidated*.safetensors (the same weights in another naming scheme) are
// skipped so they are not downloaded twice.
func PackFilter(p string) bool {
	if strings.Contains(p, "/") {
		return false
	}
	if packFiles[p] {
		return true
	}
	return strings.HasSuffix(p, ".safetensors") && !strings.HasPrefix(p, "consolidated")
}

// repoFolderName is the cache folder of a model repo: "models--Org--Name".
func repoFolderName(repo string) string {
	return "models--" + strings.ReplaceAll(repo, "/", "--")
}
