package qwentok

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
)

func TestTokenizerDigest(t *testing.T) {
	b, err := TokenizerJSON()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != TokenizerSHA256 {
		t.Fatalf("sha256 %s; want %s", got, TokenizerSHA256)
	}
	var cfg map[string]any
	if err := json.Unmarshal(TokenizerConfigJSON(), &cfg); err != nil || cfg["chat_template"] == nil {
		t.Fatalf("tokenizer_config.json has no chat_template (err %v)", err)
	}
}
