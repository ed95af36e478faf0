package format

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestProgramsKey: this writer lists the ANE programs under the manifest key "programs"; a
// reader takes the key "kernels" from bundles of minor versions 0 to 2, which wrote it, and
// ignores it, like any unknown field, in a bundle of a later minor.
func TestProgramsKey(t *testing.T) {
	m := testManifest()
	m.Programs = []Program{
		{Name: "layers.0.mlp.s32", Kind: "mlp", Seq: 32, Decode: true, MIL: "mil/empty"},
		{Name: "lm_head.0.s32", Kind: "lm_head", Layer: -1, Seq: 32, MIL: "mil/empty"},
	}
	path := filepath.Join(t.TempDir(), "p.aneb")
	writeBundle(t, path, smallSections(), m)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	manOff := int(le.Uint64(b[offManifestOff:]))
	if man := b[manOff:]; !bytes.Contains(man, []byte(`"programs": [`)) || bytes.Contains(man, []byte(`"kernels"`)) {
		t.Fatalf("manifest does not list its programs under \"programs\":\n%s", man)
	}
	for _, tc := range []struct {
		minor uint16
		key   string
		want  int
	}{
		{MinorVersion, "programs", 2},
		{0, "kernels", 2},
		{2, "kernels", 2},
		{2, "programs", 0},
		{programsKeyMinor, "kernels", 0},
		{MinorVersion + 1, "kernels", 0},
	} {
		old := withManifest(b, tc.minor, func(man []byte) []byte {
			return bytes.Replace(man, []byte(`"programs": [`), []byte(`"`+tc.key+`": [`), 1)
		})
		bun, err := openBytes(old)
		if err != nil {
			t.Fatalf("1.%d, key %q: %v", tc.minor, tc.key, err)
		}
		if got := bun.Manifest().Programs; len(got) != tc.want || tc.want > 0 && got[1].Name != "lm_head.0.s32" {
			t.Errorf("1.%d, key %q: programs %+v; want %d", tc.minor, tc.key, got, tc.want)
		}
	}
}

// withManifest returns a copy of the bundle b labelled minor version minor (header and
// format_version) with its manifest edited by edit, the header's lengths and root digest
// made to match.
func withManifest(b []byte, minor uint16, edit func(man []byte) []byte) []byte {
	manOff := le.Uint64(b[offManifestOff:])
	man := bytes.Clone(b[manOff:])
	v := fmt.Appendf(nil, `"format_version": "1.%d"`, minor)
	man = bytes.Replace(man, fmt.Appendf(nil, `"format_version": "%s"`, VersionString()), v, 1)
	man = edit(man)
	out := append(bytes.Clone(b[:manOff]), man...)
	le.PutUint16(out[offMinor:], minor)
	le.PutUint64(out[offManifestLen:], uint64(len(man)))
	le.PutUint64(out[offFileSize:], uint64(len(out)))
	reseal(out)
	return out
}
