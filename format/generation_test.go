package format

import (
	"math"
	"strings"
	"testing"
)

// TestGenerationCheck: each out-of-range default is reported with its generation_config.json
// field name; in-range and absent fields pass.
func TestGenerationCheck(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i := func(v int) *int { return &v }
	if err := (Generation{}).Check(); err != nil {
		t.Errorf("empty config: %v", err)
	}
	ok := Generation{Temperature: f(0), TopP: f(1), MinP: f(0), RepetitionPenalty: f(1.1), TopK: i(0)}
	if err := ok.Check(); err != nil {
		t.Errorf("valid config: %v", err)
	}
	for want, g := range map[string]Generation{
		`field "temperature": -1; expected a number >= 0`:      {Temperature: f(-1)},
		`field "temperature": NaN; expected a number >= 0`:     {Temperature: f(math.NaN())},
		`field "top_p": 0; expected a number in (0, 1]`:        {TopP: f(0)},
		`field "top_p": 1.5; expected a number in (0, 1]`:      {TopP: f(1.5)},
		`field "min_p": 2; expected a number in [0, 1]`:        {MinP: f(2)},
		`field "repetition_penalty": 0; expected a number > 0`: {RepetitionPenalty: f(0)},
		`field "top_k": -3; expected an integer >= 0`:          {TopK: i(-3)},
	} {
		if err := g.Check(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v; want %q", err, want)
		}
	}
}
