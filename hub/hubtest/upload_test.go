package hubtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestUploadsRefuse checks that the upload API refuses what the Hub and S3 refuse, so that a
// client passing the push tests really follows the protocol.
func TestUploadsRefuse(t *testing.T) {
	s := New(t, Options{Tokens: []string{"hf_ok"}})
	u := NewUploads(t, s, UploadOptions{MultipartThreshold: 1 << 20, ChunkSize: 1 << 19})
	do := func(method, url, token, ctype string, body []byte) (*http.Response, string) {
		req, _ := http.NewRequest(method, url, bytes.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	create := []byte(`{"name":"m","organization":"o"}`)
	if r, _ := do("POST", u.URL+"/api/repos/create", "", "application/json", create); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("create without a token: %d", r.StatusCode)
	}
	if r, _ := do("POST", u.URL+"/api/repos/create", "hf_ok", "application/json", create); r.StatusCode != http.StatusOK {
		t.Fatalf("create: %d", r.StatusCode)
	}
	if r, _ := do("POST", u.URL+"/api/repos/create", "hf_ok", "application/json", create); r.StatusCode != http.StatusConflict {
		t.Errorf("second create: %d, want 409", r.StatusCode)
	}

	data := bytes.Repeat([]byte("weights\x00"), 200_000) // 1.6 MB: multipart
	sum := sha256.Sum256(data)
	oid := hex.EncodeToString(sum[:])
	batch := []byte(`{"operation":"upload","transfers":["basic","multipart"],"hash_algo":"sha256","objects":[{"oid":"` + oid + `","size":1600000}]}`)
	r, body := do("POST", u.URL+"/o/m.git/info/lfs/objects/batch", "hf_ok", "application/vnd.git-lfs+json", batch)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("batch: %d %s", r.StatusCode, body)
	}
	var ans struct {
		Objects []struct {
			Actions map[string]struct {
				Href   string            `json:"href"`
				Header map[string]string `json:"header"`
			} `json:"actions"`
		} `json:"objects"`
	}
	json.Unmarshal([]byte(body), &ans)
	up := ans.Objects[0].Actions["upload"]
	if up.Header["chunk_size"] != "524288" || up.Header["4"] == "" || up.Header["5"] != "" {
		t.Fatalf("multipart header: %v", up.Header)
	}
	// S3 refuses a second authentication mechanism.
	if r, _ := do("PUT", up.Header["1"], "hf_ok", "", data[:1<<19]); r.StatusCode != http.StatusBadRequest || u.StorageAuthViolations() != 1 {
		t.Errorf("part upload with a token: %d", r.StatusCode)
	}
	// A forged signature is refused.
	if r, _ := do("PUT", strings.Replace(up.Header["1"], "sig=", "sig=x", 1), "", "", data[:1<<19]); r.StatusCode != http.StatusForbidden {
		t.Errorf("part upload with a bad signature: %d", r.StatusCode)
	}
	type part struct {
		PartNumber int    `json:"partNumber"`
		ETag       string `json:"etag"`
	}
	var parts []part
	for i := 1; i <= 4; i++ {
		chunk := data[(i-1)<<19 : min(i<<19, len(data))]
		if i == 3 {
			chunk = bytes.ToUpper(chunk) // corrupt one part
		}
		r, _ := do("PUT", up.Header[string(rune('0'+i))], "", "", chunk)
		if r.StatusCode != http.StatusOK || r.Header.Get("ETag") == "" {
			t.Fatalf("part %d: %d", i, r.StatusCode)
		}
		parts = append(parts, part{i, r.Header.Get("ETag")})
	}
	complete, _ := json.Marshal(map[string]any{"oid": oid, "parts": parts})
	if r, body := do("POST", up.Href, "", "application/vnd.git-lfs+json", complete); r.StatusCode != http.StatusBadRequest || !strings.Contains(body, "does not match") {
		t.Errorf("completing with a corrupt part: %d %s", r.StatusCode, body)
	}
	// A commit naming an object that was never stored.
	commit := `{"key":"header","value":{"summary":"x"}}` + "\n" + `{"key":"lfsFile","value":{"path":"w.bin","algo":"sha256","oid":"` + oid + `"}}` + "\n"
	if r, body := do("POST", u.URL+"/api/models/o/m/commit/main", "hf_ok", "application/x-ndjson", []byte(commit)); r.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("commit of a missing object: %d %s", r.StatusCode, body)
	}
	// A regular file commits and is then served like any other.
	commit = `{"key":"header","value":{"summary":"readme"}}` + "\n" + `{"key":"file","value":{"path":"README.md","content":"aGk=","encoding":"base64"}}` + "\n"
	if r, body := do("POST", u.URL+"/api/models/o/m/commit/main", "hf_ok", "application/x-ndjson", []byte(commit)); r.StatusCode != http.StatusOK {
		t.Fatalf("commit: %d %s", r.StatusCode, body)
	}
	if r, body := do("GET", u.URL+"/o/m/resolve/main/README.md", "", "", nil); r.StatusCode != http.StatusOK || body != "hi" {
		t.Errorf("served README: %d %q", r.StatusCode, body)
	}
}
