package toolcall

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/anepack/anepack/internal/qwentok"
	"github.com/anepack/anepack/serve/grammar"
	"github.com/anepack/anepack/tokenizer"
)

var qwen struct {
	once  sync.Once
	vocab *grammar.Vocab
	err   error
}

func qwenVocab(t *testing.T) *grammar.Vocab {
	qwen.once.Do(func() {
		tj, err := qwentok.TokenizerJSON()
		if err != nil {
			qwen.err = err
			return
		}
		tok, err := tokenizer.LoadJSON(tj, qwentok.TokenizerConfigJSON())
		if err != nil {
			qwen.err = err
			return
		}
		qwen.vocab = grammar.NewVocab(tok, 151936)
	})
	if qwen.err != nil {
		t.Fatal(qwen.err)
	}
	return qwen.vocab
}

var tools = []Tool{
	{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":10},"unit":{"enum":["c","f"]}},"required":["city"],"additionalProperties":false}`)},
	{Name: "now"},
}

// TestConstrainedCallsParse: random token choices under the tool-call grammar always make text
// that the parser reads as calls to the given tools, with arguments that match (Hermes and
// Llama 3 forms, one call or several, or one named function).
func TestConstrainedCallsParse(t *testing.T) {
	v := qwenVocab(t)
	const eos = 151645
	r := rand.New(rand.NewPCG(1, 2))
	mask := grammar.NewMask(v.Size())
	for _, f := range []Format{Hermes, Llama3JSON} {
		for _, tc := range []struct {
			only     string
			parallel bool
		}{{"", true}, {"", false}, {"now", false}, {"get_weather", true}} {
			g, err := Constrain(f, tools, tc.only, tc.parallel)
			if err != nil {
				t.Fatal(err)
			}
			finished := 0
			for seed := range 8 {
				text, ok := walk(t, g, v, mask, r, eos, 300)
				if !ok {
					continue
				}
				finished++
				content, calls := parse(f, text)
				if content != "" || len(calls) == 0 {
					t.Fatalf("%v %+v seed %d: %q parsed to content %q and %d calls", f, tc, seed, text, content, len(calls))
				}
				if !tc.parallel && len(calls) != 1 {
					t.Fatalf("%v %+v: %d calls in %q; want 1", f, tc, len(calls), text)
				}
				for _, c := range calls {
					if tc.only != "" && c.Name != tc.only {
						t.Fatalf("%v: called %q; want only %q", f, c.Name, tc.only)
					}
					var args map[string]any
					if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
						t.Fatalf("%v: arguments %q: %v", f, c.Arguments, err)
					}
					switch c.Name {
					case "now":
						if len(args) != 0 {
							t.Fatalf("now called with %v", args)
						}
					case "get_weather":
						city, ok := args["city"].(string)
						if !ok || len([]rune(city)) > 10 || (args["unit"] != nil && args["unit"] != "c" && args["unit"] != "f") {
							t.Fatalf("get_weather called with %v", args)
						}
					default:
						t.Fatalf("called unknown %q", c.Name)
					}
				}
			}
			if finished < 4 {
				t.Errorf("%v %+v: only %d of 8 walks finished", f, tc, finished)
			}
		}
	}
}

// walk picks random allowed tokens, preferring ones that close something, until an eos.
func walk(t *testing.T, g *grammar.Grammar, v *grammar.Vocab, mask grammar.Mask, r *rand.Rand, eos, steps int) (string, bool) {
	mt := grammar.NewMatcher(g, v, []int{eos})
	var out strings.Builder
	for range steps {
		mt.Mask(mask)
		var all, closing []int
		for id := range v.Size() {
			if mask.Has(id) {
				all = append(all, id)
			}
		}
		if len(all) == 0 {
			t.Fatalf("empty mask after %q", out.String())
		}
		if len(all) < 5000 {
			closing = all // few choices: the structure is being written
		}
		pick := all[r.IntN(len(all))]
		if r.IntN(3) > 0 && len(closing) > 0 {
			pick = closing[r.IntN(len(closing))]
		}
		if slicesContains(all, eos) && r.IntN(2) == 0 {
			pick = eos
		}
		if !mt.Accept(pick) {
			t.Fatalf("token %d refused after %q", pick, out.String())
		}
		if pick == eos {
			return out.String(), true
		}
		out.Write(v.TokenBytes(pick))
	}
	return out.String(), false
}

func slicesContains(s []int, x int) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

func TestConstrainErrors(t *testing.T) {
	_, err := Constrain(Hermes, []Tool{{Name: "a"}, {Name: "b", Parameters: json.RawMessage(`{"type":"string","pattern":"x"}`)}}, "", true)
	var te *ToolError
	var se *grammar.SchemaError
	if !errors.As(err, &te) || te.Index != 1 || !errors.As(err, &se) || se.Keyword != "pattern" {
		t.Fatalf("error %v; want tools[1] naming pattern", err)
	}
	if _, err := Constrain(Hermes, tools, "nope", false); err == nil {
		t.Fatal("a named tool that does not exist: no error")
	}
	if _, err := Constrain(None, tools, "", false); err == nil {
		t.Fatal("no format: no error")
	}
}
