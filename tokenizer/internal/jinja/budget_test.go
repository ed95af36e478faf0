package jinja

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hostileTemplates are templates a malicious bundle could carry, each with the error kind it
// must now fail with. Before the budgets, the first ones ran the process out of memory (or, for
// "ab" * 2**62, panicked in strings.Repeat), the loops ran for minutes and the self-containing
// namespace overflowed the goroutine stack.
var hostileTemplates = []struct {
	name, src, kind string
}{
	{"indent width", `{{ "x"|indent(10000000000) }}`, "MemoryError"},
	{"center width", `{{ "x"|center(10000000000) }}`, "MemoryError"},
	{"tojson indent", `{{ {"a": 1}|tojson(indent=10000000000) }}`, "MemoryError"},
	{"string repeat overflow", `{{ "ab" * 2**62 }}`, "MemoryError"},
	{"list repeat overflow", `{{ [1, 2] * 2**62 }}`, "MemoryError"},
	{"tuple repeat overflow", `{{ (1, 2) * 2**62 }}`, "MemoryError"},
	{"doubling loop", `{% set ns = namespace(s="x") %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}`, "MemoryError"},
	{"doubling list", `{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}`, "MemoryError"},
	{"output flood", `{% for i in range(100000) %}{{ "x" * 1000 }}{% endfor %}`, "MemoryError"},
	{"join of shared strings", `{% set s = "x" * 1000000 %}{{ ([s] * 1000)|join }}`, "MemoryError"},
	{"repr of shared strings", `{% set s = "x" * 1000000 %}{{ [s] * 1000 }}`, "MemoryError"},
	{"percent format", `{% set s = "x" * 1000000 %}{{ "%s" % ([s] * 100,) }}`, "MemoryError"},
	{"str.format", `{% set s = "x" * 1000000 %}{{ "{}".format([s] * 100) }}`, "MemoryError"},
	{"replace growth", `{% set s = "x" * 100000 %}{{ s.replace("x", s) }}`, "MemoryError"},
	{"split into pieces", `{{ ("a" * 4000000).split("a")|length }}`, "MemoryError"},
	{"iterate a long string", `{{ ("a" * 4000000)|list|length }}`, "MemoryError"},
	{"compare in a loop", `{% set s = "x" * 4000000 %}{% for i in range(100000) %}{% if s == s ~ "" %}{% endif %}{% endfor %}`, "MemoryError"},
	{"search in a loop", `{% set s = "x" * 4000000 %}{% for i in range(100000) %}{% if "y" in s %}{% endif %}{% endfor %}`, "MemoryError"},
	{"index in a loop", `{% set s = "é" * 1000000 %}{% for i in range(100000) %}{{ s[500000] }}{% endfor %}`, "MemoryError"},
	{"length in a loop", `{% set s = "x" * 4000000 %}{% for i in range(100000) %}{{ s|length }}{% endfor %}`, "MemoryError"},
	{"dict key hashing", `{% set s = "x" * 4000000 %}{% set d = {s: 1} %}{% for i in range(100000) %}{{ d[s] }}{% endfor %}`, "MemoryError"},
	{"nested ranges", `{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}`, "TemplateRuntimeError"},
	{"macro loop", `{% macro m(n) %}{{ n }}{% endmacro %}{% for a in range(100000) %}{% for b in range(100000) %}{{ m(b) }}{% endfor %}{% endfor %}`, "TemplateRuntimeError"},
	{"self-containing namespace", `{% set ns = namespace(a=1) %}{% set ns.b = ns %}{{ ns }}`, "RecursionError"},
	{"deeply nested list", `{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}`, "RecursionError"},
	{"deeply nested list equality", `{% set ns = namespace(a=[], b=[]) %}{% for i in range(100000) %}{% set ns.a = [ns.a] %}{% set ns.b = [ns.b] %}{% endfor %}{{ ns.a == ns.b }}`, "RecursionError"},
	{"nested parentheses", "{{ " + strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000) + " }}", "TemplateSyntaxError"},
	{"nested not", "{{ " + strings.Repeat("not ", 100000) + "1 }}", "TemplateSyntaxError"},
	{"filter chain", "{{ 1" + strings.Repeat("|abs", 100000) + " }}", "TemplateSyntaxError"},
	{"addition chain", "{{ 1" + strings.Repeat(" + 1", 100000) + " }}", "TemplateSyntaxError"},
	{"nested blocks", strings.Repeat("{% if true %}", 20000) + strings.Repeat("{% endif %}", 20000), "TemplateSyntaxError"},
	{"huge template", strings.Repeat("{{ 1 }}", 1<<20), "TemplateSyntaxError"},
}

// TestHostileTemplates renders each hostile template with the default budgets: it must fail with
// the expected kind of error, quickly, having allocated a bounded amount of memory.
func TestHostileTemplates(t *testing.T) {
	for _, c := range hostileTemplates {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			alloc := allocated()
			tmpl, err := Parse(c.src)
			if err == nil {
				_, err = tmpl.Render(nil, RenderOptions{})
			}
			spent, took := allocated()-alloc, time.Since(start)
			var e *Error
			if !errors.As(err, &e) || e.Kind != c.kind {
				t.Fatalf("got %v; want a %s", err, c.kind)
			}
			// The budget is 64 MiB of values; Go's own overheads (map growth, builder slack,
			// the parse of a large template) stay within the same again.
			if spent > 2*DefaultMaxAlloc {
				t.Errorf("allocated %d MiB (limit %d MiB): %v", spent>>20, 2*DefaultMaxAlloc>>20, err)
			}
			if took > 10*time.Second {
				t.Errorf("took %v to refuse: %v", took, err)
			}
			t.Logf("%v in %v, %d MiB allocated", err, took.Round(time.Millisecond), spent>>20)
		})
	}
}

// allocated is the bytes this process has allocated so far.
func allocated() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.TotalAlloc)
}

// TestQuickPowers: integer powers take O(log n) multiplications; (-1) ** (2**63-1) used to loop
// 2**63 times.
func TestQuickPowers(t *testing.T) {
	for src, want := range map[string]string{
		"{{ (-1) ** 9223372036854775807 }}": "-1",
		"{{ (-1) ** 9223372036854775806 }}": "1",
		"{{ 1 ** 9223372036854775807 }}":    "1",
		"{{ 0 ** 9223372036854775807 }}":    "0",
		"{{ 3 ** 39 }}":                     "4052555153018976267",
		"{{ 2 ** 62 }}":                     "4611686018427387904",
		"{{ [] * 2**62 }}":                  "[]",
		"{{ '' * 2**62 }}":                  "",
		"{{ 1.5|round(1000000000) }}":       "1.5",
	} {
		out, err := renderSrc(t, src, RenderOptions{})
		if err != nil || out != want {
			t.Errorf("%s = %q, %v; want %q", src, out, err, want)
		}
	}
	for _, src := range []string{"{{ 2 ** 63 }}", "{{ 3 ** 40 }}", "{{ (-2) ** 9223372036854775807 }}"} {
		if _, err := renderSrc(t, src, RenderOptions{}); err == nil || !strings.Contains(err.Error(), "OverflowError") {
			t.Errorf("%s: %v; want an OverflowError", src, err)
		}
	}
}

func renderSrc(t *testing.T, src string, opts RenderOptions) (string, error) {
	t.Helper()
	tmpl, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl.Render(nil, opts)
}

// TestBudgetsConfigurable: the caller's limits replace the defaults, and Usage reports what a
// rendering spent.
func TestBudgetsConfigurable(t *testing.T) {
	src := `{{ "x" * 5000 }}`
	if _, err := renderSrc(t, src, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := renderSrc(t, src, RenderOptions{MaxBytes: 4096}); err == nil || !strings.Contains(err.Error(), "MaxBytes") {
		t.Errorf("MaxBytes 4096: %v; want the size limit", err)
	}
	if _, err := renderSrc(t, `{% for i in range(10) %}{{ "x" * 1000 }}{% endfor %}`, RenderOptions{MaxAlloc: 5000}); err == nil || !strings.Contains(err.Error(), "MaxAlloc") {
		t.Errorf("MaxAlloc 5000: %v; want the allocation budget", err)
	}
	if _, err := renderSrc(t, `{% for i in range(10) %}{% endfor %}`, RenderOptions{MaxSteps: 10}); err == nil || !strings.Contains(err.Error(), "MaxSteps") {
		t.Errorf("MaxSteps 10: %v; want the step budget", err)
	}
	var u Usage
	if _, err := renderSrc(t, `{% for i in range(10) %}{{ i }}{% endfor %}`, RenderOptions{Usage: &u}); err != nil {
		t.Fatal(err)
	}
	// The for statement, 3 to evaluate range(10), 10 iterations, 10 output statements and the
	// 10 names they print.
	if u.Steps != 34 || u.Bytes == 0 {
		t.Errorf("usage %+v; want 34 steps and some bytes", u)
	}
}

// TestDefaultsGrowWithInput: a conversation far larger than the fixed defaults still renders,
// because the defaults add a multiple of the input's size.
func TestDefaultsGrowWithInput(t *testing.T) {
	tmpl, err := Parse(`{% for m in messages %}{{ m.role }}: {{ m.content|trim }}{{ "\n" }}{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	msgs := List{}
	content := strings.Repeat("word ", 2000)
	for range 2000 { // 20 MB, beyond DefaultMaxBytes
		d := NewDict()
		d.Set("role", "user")
		d.Set("content", content)
		msgs = append(msgs, d)
	}
	out, err := tmpl.Render(map[string]Value{"messages": msgs}, RenderOptions{})
	if err != nil || len(out) < 2000*len(content) {
		t.Fatalf("%d bytes, %v", len(out), err)
	}
}

// TestStepBudgetCost measures what exhausting the default step budget costs: it used to be 50
// million loop iterations and about 25 seconds of CPU; it must now be about a second at most
// (the bound here is loose for shared machines).
func TestStepBudgetCost(t *testing.T) {
	for _, src := range []string{
		`{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}`,
		`{% macro m() %}{% endmacro %}{% for a in range(100000) %}{% for b in range(100000) %}{{ m() }}{% endfor %}{% endfor %}`,
		`{% for a in range(100000) %}{% for b in range(100000) %}{% set x = {"a": b, "b": [b, b]} %}{% endfor %}{% endfor %}`,
	} {
		start := time.Now()
		_, err := renderSrc(t, src, RenderOptions{MaxAlloc: 1 << 40})
		took := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), "step budget") {
			t.Fatalf("%s: %v; want the step budget exhausted", src, err)
		}
		if took > 5*time.Second {
			t.Errorf("%s: exhausting the default step budget took %v", src, took)
		}
		t.Logf("%v for %s", took.Round(time.Millisecond), src)
	}
}

// TestParseJSONDepth: deeply nested JSON is refused instead of recursing without bound.
func TestParseJSONDepth(t *testing.T) {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	if _, err := ParseJSON([]byte(deep)); err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Fatalf("got %v; want the nesting refused", err)
	}
	if _, err := ParseJSON([]byte(strings.Repeat("[", 100) + strings.Repeat("]", 100))); err != nil {
		t.Fatal(err)
	}
}
