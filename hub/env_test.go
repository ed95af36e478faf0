package hub

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func lookupOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadEnvDefaults(t *testing.T) {
	home := t.TempDir()
	e, err := LoadEnv(lookupOf(map[string]string{"HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	if e.Endpoint != DefaultEndpoint || e.Home != filepath.Join(home, ".cache", "huggingface") ||
		e.HubCache != filepath.Join(home, ".cache", "huggingface", "hub") || e.Token != "" || e.Offline || e.ProgressBars != nil {
		t.Fatalf("defaults: %+v", e)
	}
	e, _ = LoadEnv(lookupOf(map[string]string{"HOME": home, "XDG_CACHE_HOME": "/xdg"}))
	if e.HubCache != "/xdg/huggingface/hub" {
		t.Errorf("XDG_CACHE_HOME: hub cache %s", e.HubCache)
	}
}

func TestLoadEnvPrecedence(t *testing.T) {
	home := t.TempDir()
	hfHome := filepath.Join(home, "hf")
	os.MkdirAll(hfHome, 0o755)
	os.WriteFile(filepath.Join(hfHome, "token"), []byte("hf_fromfile\n"), 0o600)
	other := filepath.Join(home, "other-token")
	os.WriteFile(other, []byte("  hf_frompath  "), 0o600)

	cases := []struct {
		env        map[string]string
		token, src string
	}{
		{map[string]string{"HF_HOME": hfHome}, "hf_fromfile", filepath.Join(hfHome, "token")},
		{map[string]string{"HF_HOME": hfHome, "HF_TOKEN_PATH": other}, "hf_frompath", other},
		{map[string]string{"HF_HOME": hfHome, "HUGGING_FACE_HUB_TOKEN": "hf_legacy"}, "hf_legacy", "HUGGING_FACE_HUB_TOKEN"},
		{map[string]string{"HF_HOME": hfHome, "HUGGING_FACE_HUB_TOKEN": "hf_legacy", "HF_TOKEN": "hf_env"}, "hf_env", "HF_TOKEN"},
		{map[string]string{"HF_HOME": hfHome, "HF_TOKEN": "hf_env", "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1"}, "", ""},
	}
	for _, c := range cases {
		c.env["HOME"] = home
		e, err := LoadEnv(lookupOf(c.env))
		if err != nil {
			t.Fatal(err)
		}
		if e.Token != c.token || e.TokenSource != c.src {
			t.Errorf("%v: token %q from %q, want %q from %q", c.env, e.Token, e.TokenSource, c.token, c.src)
		}
	}

	e, err := LoadEnv(lookupOf(map[string]string{
		"HOME": home, "HF_HOME": "~/hfhome", "HUGGINGFACE_HUB_CACHE": "/legacy", "HF_ENDPOINT": "http://127.0.0.1:9/",
		"TRANSFORMERS_OFFLINE": "yes", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
		"HF_HUB_ETAG_TIMEOUT": "2.5", "HF_HUB_DOWNLOAD_TIMEOUT": "30",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if e.Home != filepath.Join(home, "hfhome") || e.HubCache != "/legacy" || e.Endpoint != "http://127.0.0.1:9" ||
		!e.Offline || e.ProgressBars == nil || *e.ProgressBars || e.MetadataTimeout != 2500*time.Millisecond || e.StallTimeout != 30*time.Second {
		t.Fatalf("got %+v", e)
	}
	e, _ = LoadEnv(lookupOf(map[string]string{"HOME": home, "HF_HUB_CACHE": "/new", "HUGGINGFACE_HUB_CACHE": "/legacy",
		"HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_PROGRESS_BARS": "false"}))
	if e.HubCache != "/new" || e.Offline || e.ProgressBars == nil || !*e.ProgressBars {
		t.Fatalf("got %+v", e)
	}
	c := e.Client()
	if c.CacheDir != "/new" || c.Endpoint != DefaultEndpoint {
		t.Fatalf("Client(): %+v", c)
	}
	if _, err := LoadEnv(lookupOf(map[string]string{"HOME": home, "HF_HUB_ETAG_TIMEOUT": "soon"})); err == nil {
		t.Error("a bad HF_HUB_ETAG_TIMEOUT was accepted")
	}
}

func TestTruthy(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "ON": true, "yes": true, "True": true, "0": false, "off": false, "": false, "2": false} {
		if isTruthy(v) != want {
			t.Errorf("isTruthy(%q) != %v", v, want)
		}
	}
}
