package modelname

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/anepack/anepack/hub"
)

// DefaultTag is the tag of a name that has none: FP16 weights, what anepack packs by default.
const DefaultTag = "f16"

// Tags are the tags a name may have, one per weight storage type anepack packs; each is also
// the value pack.Options.DType takes for it.
var Tags = []string{"f16", "f32", "int8", "int4"}

// Name is a stored model's name: Model:Tag.
type Name struct {
	// Model is a Hugging Face repo id ("Org/Name") or a single-segment model name.
	Model string
	// Tag is one of Tags.
	Tag string
}

// String is the name as the store records it, "Org/Name:f16".
func (n Name) String() string { return n.Model + ":" + n.Tag }

// IsRepo reports whether the model part is a Hugging Face repo id, which anerun can fetch and
// pack when the store does not have it.
func (n Name) IsRepo() bool { return hub.IsRepoID(n.Model) }

// DType is the storage type to pack with for this name's tag (pack.Options.DType).
func (n Name) DType() string { return n.Tag }

// localModelRE is a model name without an org: what anepack records for a local checkpoint
// directory (its folder name), e.g. "qwen2-tiny".
var localModelRE = regexp.MustCompile(`^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?$`)

// Parse parses "Org/Name", "Org/Name:tag", "name" or "name:tag"; a missing tag is
// dtype's (when dtype is set, from --dtype) or DefaultTag. ok is false when s does not have
// the shape of a name at all (a path, a URL), so the caller can report it as what it looks
// like; err is set when it has the shape but something in it is wrong (an unknown tag, a tag
// that contradicts --dtype).
func Parse(s, dtype string) (n Name, ok bool, err error) {
	model, tag, hasTag := strings.Cut(s, ":")
	if looksLikeFile(model) {
		return Name{}, false, nil
	}
	if !hub.IsRepoID(model) && !(localModelRE.MatchString(model) && !strings.Contains(model, "..")) {
		return Name{}, false, nil
	}
	flagTag := ""
	if dtype != "" {
		if flagTag, err = TagOf(dtype); err != nil {
			return Name{}, true, fmt.Errorf("--dtype %q: expected %s", dtype, tagList())
		}
	}
	switch {
	case hasTag:
		t, terr := TagOf(tag)
		if terr != nil {
			return Name{}, true, fmt.Errorf("%s: unknown tag %q; expected %s", s, tag, tagList())
		}
		if flagTag != "" && flagTag != t {
			return Name{}, true, fmt.Errorf("%s and --dtype %s name different variants; give one of them", s, dtype)
		}
		tag = t
	case flagTag != "":
		tag = flagTag
	default:
		tag = DefaultTag
	}
	return Name{Model: model, Tag: tag}, true, nil
}

// TagOf returns the tag for a weight storage type as the user or a bundle's manifest spells
// it: "f16"/"fp16"/"float16", "f32"/..., "int8"/"q8", "int4"/"q4".
func TagOf(dtype string) (string, error) {
	switch strings.ToLower(dtype) {
	case "f16", "fp16", "float16":
		return "f16", nil
	case "f32", "fp32", "float32":
		return "f32", nil
	case "int8", "q8", "i8":
		return "int8", nil
	case "int4", "q4", "u4":
		return "int4", nil
	}
	return "", fmt.Errorf("unknown weight type %q; expected %s", dtype, tagList())
}

func tagList() string {
	return strings.Join(Tags[:len(Tags)-1], ", ") + " or " + Tags[len(Tags)-1] + " (default " + DefaultTag + ")"
}

// sanitize turns a folder or model name into a valid single-segment model name: characters a
// name cannot hold become '-'.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	out := strings.Trim(string(b), "-.")
	for strings.Contains(out, "..") {
		out = strings.ReplaceAll(out, "..", ".")
	}
	if out == "" {
		out = "model"
	}
	return out
}

// fileSuffixes are endings that make an argument a file name, never a model name: a missing
// "qwen.aneb" is a file that is not there, not a model to look for.
var fileSuffixes = []string{".aneb", ".gguf", ".safetensors", ".bin", ".json"}

func looksLikeFile(s string) bool {
	l := strings.ToLower(s)
	for _, suf := range fileSuffixes {
		if strings.HasSuffix(l, suf) {
			return true
		}
	}
	return false
}
