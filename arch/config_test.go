package arch

import (
	"errors"
	"strings"
	"testing"
)

const qwenConfig = `{"architectures":["Qwen2ForCausalLM"],"hidden_size":896,"intermediate_size":4864,
"num_hidden_layers":24,"num_attention_heads":14,"num_key_value_heads":2,"vocab_size":151936,
"max_position_embeddings":32768,"rms_norm_eps":1e-06,"rope_theta":1000000.0,"tie_word_embeddings":true,
"bos_token_id":151643,"eos_token_id":[151645,151643],"hidden_act":"silu","rope_scaling":null}`

func TestParseQwen25Config(t *testing.T) {
	c, err := ParseConfig([]byte(qwenConfig), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.HeadDim != 64 || c.NumKeyValueHeads != 2 || !c.TieWordEmbeddings || c.RopeTheta != 1e6 || c.RMSNormEps != 1e-6 {
		t.Errorf("config %+v", c)
	}
	if len(c.EOSTokenIDs) != 2 || c.EOSTokenIDs[0] != 151645 || c.BOSTokenID != 151643 {
		t.Errorf("token ids: bos %d eos %v", c.BOSTokenID, c.EOSTokenIDs)
	}
	fam, _ := Lookup(c)
	ts := fam.Tensors(c)
	// embed + 24 layers x 12 + final norm; tied, so no lm_head.
	if len(ts) != 1+24*12+1 {
		t.Fatalf("%d tensors", len(ts))
	}
	var params int
	for _, tt := range ts {
		params += Elements(tt.Shape)
		if tt.Name == LayerTensor(3, KProj) && (tt.Shape[0] != 128 || tt.Shape[1] != 896 || tt.Group != GroupQKV) {
			t.Errorf("k_proj %+v", tt)
		}
	}
	if params != 494032768 { // Qwen2.5-0.5B's published parameter count
		t.Errorf("%d parameters; want 494032768", params)
	}
}

// TestConfigErrors checks that each bad config names the file, the field and what was expected.
func TestConfigErrors(t *testing.T) {
	edit := func(old, new string) string {
		if !strings.Contains(qwenConfig, old) {
			t.Fatalf("test bug: %q not in the config", old)
		}
		return strings.Replace(qwenConfig, old, new, 1)
	}
	cases := []struct{ config, want string }{
		{"[1,2]", "not a JSON object"},
		{edit(`"hidden_size":896,`, ""), `field "hidden_size": missing`},
		{edit(`"hidden_size":896`, `"hidden_size":"896"`), `field "hidden_size": expected a number`},
		{edit(`"hidden_size":896`, `"hidden_size":-1`), `field "hidden_size": expected a positive integer`},
		{edit(`"num_hidden_layers":24`, `"num_hidden_layers":2.5`), `field "num_hidden_layers": expected an integer`},
		{edit(`"num_key_value_heads":2`, `"num_key_value_heads":3`), `field "num_key_value_heads": 3 must divide`},
		{edit(`"num_attention_heads":14`, `"num_attention_heads":5`), `field "num_attention_heads"`},
		{edit(`["Qwen2ForCausalLM"]`, `["LlamaForCausalLM"]`), `"LlamaForCausalLM" is not supported`},
		{edit(`"architectures":["Qwen2ForCausalLM"],`, ""), `field "architectures": missing`},
		{edit(`"hidden_act":"silu"`, `"hidden_act":"gelu"`), `field "hidden_act"`},
		{edit(`"rope_scaling":null`, `"rope_scaling":{"type":"yarn","factor":4}`), `rope scaling "yarn" is not supported`},
		{edit(`"rms_norm_eps":1e-06`, `"rms_norm_eps":0`), `field "rms_norm_eps": expected a positive number`},
		{edit(`"eos_token_id":[151645,151643]`, `"eos_token_id":"x"`), `field "eos_token_id"`},
		{edit(`"tie_word_embeddings":true`, `"tie_word_embeddings":1`), `field "tie_word_embeddings": expected true or false`},
	}
	for _, tc := range cases {
		_, err := ParseConfig([]byte(tc.config), "m/config.json")
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "m/config.json: ") {
			t.Errorf("error %v; want a ConfigError for m/config.json mentioning %q", err, tc.want)
		}
	}
}

func TestHeadDimOverride(t *testing.T) {
	c, err := ParseConfig([]byte(strings.Replace(qwenConfig, `"hidden_size":896`, `"hidden_size":896,"head_dim":128`, 1)), "config.json")
	if err != nil || c.HeadDim != 128 {
		t.Fatalf("head_dim %v, err %v", c, err)
	}
	fam, _ := Lookup(c)
	for _, tt := range fam.Tensors(c) {
		if tt.Name == LayerTensor(0, QProj) && tt.Shape[0] != 14*128 {
			t.Errorf("q_proj shape %v with head_dim 128", tt.Shape)
		}
	}
}
