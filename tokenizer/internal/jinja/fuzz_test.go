package jinja

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzTemplate: any template text either fails to parse or renders (or fails) without panicking,
// and never allocates much beyond its budget: the seeds include every hostile template of
// TestHostileTemplates, so the fuzzer starts from what exhausted memory before the budgets.
func FuzzTemplate(f *testing.F) {
	for _, c := range hostileTemplates {
		if len(c.src) < 4096 {
			f.Add(c.src)
		}
	}
	file, err := os.Open(filepath.Join("testdata", "jinja2_cases.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		var c refCase
		if json.Unmarshal(sc.Bytes(), &c) == nil {
			f.Add(c.Template)
		}
	}
	file.Close()
	vars, err := ParseJSON([]byte(`{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "t"}]},
		{"role": "assistant", "content": "<think>r</think>a", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1.5}}}]}],
		"tools": [{"type": "function", "function": {"name": "f"}}], "add_generation_prompt": true, "bos_token": "<s>"}`))
	if err != nil {
		f.Fatal(err)
	}
	ctx := map[string]Value{}
	d := vars.(*Dict)
	for i, k := range d.Keys() {
		ctx[k.(string)] = d.Values()[i]
	}
	const maxAlloc = 8 << 20
	f.Fuzz(func(t *testing.T, src string) {
		before := allocated()
		tmpl, err := Parse(src)
		if err != nil {
			return
		}
		_, _ = tmpl.Render(ctx, RenderOptions{Now: fixedNow, MaxSteps: 20000, MaxBytes: 1 << 20, MaxAlloc: maxAlloc})
		// What the budget does not count (frames, maps, the parse) is bounded by the steps and
		// the template's length: a generous bound on it still catches any unchecked allocation.
		if spent, limit := allocated()-before, int64(4*maxAlloc+20000*1024+1000*len(src)); spent > limit {
			t.Fatalf("rendering allocated %d bytes, more than %d", spent, limit)
		}
	})
}

func TestStepBudget(t *testing.T) {
	tmpl, err := Parse("{% for a in range(300) %}{% for b in range(300) %}{% endfor %}{% endfor %}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmpl.Render(nil, RenderOptions{MaxSteps: 10000}); err == nil {
		t.Fatal("step budget not enforced")
	}
	if _, err := tmpl.Render(nil, RenderOptions{}); err != nil {
		t.Fatalf("90k iterations must fit the default budget: %v", err)
	}
	rec, _ := Parse("{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}")
	if _, err := rec.Render(nil, RenderOptions{}); err == nil {
		t.Fatal("unbounded macro recursion not stopped")
	}
}
