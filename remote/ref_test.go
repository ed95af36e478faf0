package remote

import (
	"strings"
	"testing"
)

func TestParseRef(t *testing.T) {
	dg := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	cases := []struct {
		in    string
		want  Ref
		canon string
	}{
		{"oci://registry.example.com/ns/name:v1", Ref{Kind: OCI, Registry: "registry.example.com", Repository: "ns/name", Tag: "v1"}, ""},
		{"oci://localhost:5000/ns/name", Ref{Kind: OCI, Registry: "localhost:5000", Repository: "ns/name", Tag: "latest"}, "oci://localhost:5000/ns/name:latest"},
		{"oci://r.io/a/b/c@" + dg, Ref{Kind: OCI, Registry: "r.io", Repository: "a/b/c", Digest: dg}, ""},
		{"oci://r.io:443/a/b:t@" + dg, Ref{Kind: OCI, Registry: "r.io:443", Repository: "a/b", Tag: "t", Digest: dg}, ""},
		{"OCI://r.io/a:b", Ref{Kind: OCI, Registry: "r.io", Repository: "a", Tag: "b"}, "oci://r.io/a:b"},
		{"hf://Org/Repo/model.aneb", Ref{Kind: HF, Repo: "Org/Repo", Revision: "main", Path: "model.aneb"}, ""},
		{"hf://Org/Repo@v1.0/sub/m.aneb", Ref{Kind: HF, Repo: "Org/Repo", Revision: "v1.0", Path: "sub/m.aneb"}, ""},
		{"hf://Org/Repo@refs%2Fpr%2F1/m.aneb", Ref{Kind: HF, Repo: "Org/Repo", Revision: "refs/pr/1", Path: "m.aneb"}, ""},
		{"hf://Org/Repo", Ref{Kind: HF, Repo: "Org/Repo", Revision: "main"}, ""},
		{"https://h.example/p/model.aneb?x=1", Ref{Kind: HTTPS, URL: "https://h.example/p/model.aneb?x=1"}, ""},
		{"http://127.0.0.1:8080/m.aneb", Ref{Kind: HTTPS, URL: "http://127.0.0.1:8080/m.aneb"}, ""},
		{"./model.aneb", Ref{Kind: Local, File: "./model.aneb"}, ""},
		{"/abs/model.aneb", Ref{Kind: Local, File: "/abs/model.aneb"}, ""},
		{"file:///abs/model.aneb", Ref{Kind: Local, File: "/abs/model.aneb"}, "/abs/model.aneb"},
	}
	for _, c := range cases {
		got, err := ParseRef(c.in)
		if err != nil {
			t.Errorf("ParseRef(%q): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseRef(%q) = %+v, want %+v", c.in, got, c.want)
		}
		canon := c.canon
		if canon == "" {
			canon = c.in
		}
		if got.String() != canon {
			t.Errorf("ParseRef(%q).String() = %q, want %q", c.in, got.String(), canon)
		}
		if again, err := ParseRef(got.String()); err != nil || again != got {
			t.Errorf("canonical form %q does not parse back: %+v %v", got.String(), again, err)
		}
	}
}

func TestParseRefErrors(t *testing.T) {
	cases := map[string]string{
		"":                             "empty",
		"ftp://h/x.aneb":               "unknown scheme",
		"oci://registry.example.com":   "no repository",
		"oci://r.io/Upper/case:v1":     "invalid repository",
		"oci://r.io/ns/n:":             "empty tag",
		"oci://r.io/ns/n:bad tag":      "invalid tag",
		"oci://r.io/ns/n@sha256:12":    "64 lowercase hex",
		"oci://r.io/ns/n@md5:12":       "not supported",
		"hf://justone":                 "org and a repo",
		"hf://o/r@/m.aneb":             "empty revision",
		"hf://o/r/../x.aneb":           "invalid file path",
		"hf://o/bad name/m.aneb":       "invalid repo id",
		"https://h.example/":           "no file",
		"https:///x.aneb":              "no host",
		"https://u:p@h.example/x.aneb": "credentials",
		"file://host/x":                "file:///",
	}
	for in, want := range cases {
		_, err := ParseRef(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRef(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}
