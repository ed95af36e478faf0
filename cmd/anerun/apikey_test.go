package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestAPIKeyFromEnvironment: $ANERUN_API_KEY guards serve and the --http shortcut, --api-key
// overrides it, and --help does not print it (it was the flag's default, which help shows).
func TestAPIKeyFromEnvironment(t *testing.T) {
	const key = "sk-env-only"
	t.Setenv(apiKeyEnv, key)
	if r := anerun(t, "", "serve", "--help"); r.code != 0 || strings.Contains(r.stdout, key) {
		t.Errorf("serve --help with $%s set: exit %d, shows the key: %v", apiKeyEnv, r.code, strings.Contains(r.stdout, key))
	}
	path := bundle(t)
	for _, c := range []struct {
		args []string
		key  string
	}{
		{[]string{"serve", path, "--addr", "127.0.0.1:0"}, key},
		{[]string{path, "--http", "0"}, key},
		{[]string{"serve", path, "--addr", "127.0.0.1:0", "--api-key", "sk-flag"}, "sk-flag"},
	} {
		p := start(t, append(c.args, "--threads", "1", "--ctx", "128")...)
		url := "http://" + serverAddr(t, p) + "/v1/models"
		for auth, want := range map[string]int{"": 401, "Bearer " + c.key: 200} {
			req, _ := http.NewRequest("GET", url, nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("anerun %s, Authorization %q: status %d, want %d", strings.Join(c.args[:1], " "), auth, resp.StatusCode, want)
			}
		}
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
}
