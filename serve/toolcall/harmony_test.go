package toolcall

import (
	"reflect"
	"strings"
	"testing"
)

// harmonyResult is what a harmony answer parses to.
type harmonyResult struct {
	reasoning, content string
	calls              []string // "name arguments"
	finished           bool     // Finish had nothing left to report
}

// parseHarmony feeds text in pieces cut at the given byte offsets and checks the event
// invariants: one of Text, Reasoning and Call per event, a call's pieces joining to its
// arguments.
func parseHarmony(t *testing.T, text string, cuts []int) harmonyResult {
	t.Helper()
	p := NewHarmonyParser()
	var ev []Event
	last := 0
	for _, c := range append(cuts, len(text)) {
		ev = append(ev, p.Push(text[last:c])...)
		last = c
	}
	tail := p.Finish()
	r := harmonyResult{finished: len(tail) == 0}
	var content, reasoning strings.Builder
	for _, e := range append(ev, tail...) {
		set := 0
		for _, b := range []bool{e.Text != "", e.Reasoning != "", e.Call != nil} {
			if b {
				set++
			}
		}
		if set != 1 {
			t.Fatalf("%q at %v: event %+v sets %d fields", text, cuts, e, set)
		}
		content.WriteString(e.Text)
		reasoning.WriteString(e.Reasoning)
		if e.Call != nil {
			if strings.Join(e.Call.Pieces, "") != e.Call.Arguments {
				t.Fatalf("%q at %v: pieces %q do not join to %q", text, cuts, e.Call.Pieces, e.Call.Arguments)
			}
			r.calls = append(r.calls, e.Call.Name+" "+e.Call.Arguments)
		}
	}
	if len(r.calls) != p.Calls() {
		t.Fatalf("%q: Calls() = %d, %d reported", text, p.Calls(), len(r.calls))
	}
	r.reasoning, r.content = reasoning.String(), content.String()
	return r
}

// TestHarmony parses harmony answers fed whole, cut at every single byte offset, cut at every
// pair of offsets (short texts) and byte by byte, which covers every way tokens can split the
// control tokens and the text around them: the result is always the same.
func TestHarmony(t *testing.T) {
	cases := []struct {
		name, text         string
		reasoning, content string
		calls              []string
	}{
		{"reasoning and answer",
			"<|channel|>analysis<|message|>2+2 is 4.<|end|><|start|>assistant<|channel|>final<|message|>4<|return|>",
			"2+2 is 4.", "4", nil},
		{"stopped before <|return|>",
			"<|channel|>analysis<|message|>Simple.<|end|><|start|>assistant<|channel|>final<|message|>The answer is 4.",
			"Simple.", "The answer is 4.", nil},
		{"call, recipient after the channel",
			"<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>",
			"Need the weather.", "", []string{`get_weather {"city": "Paris"}`}},
		{"call, recipient after the role, stopped before <|call|>",
			"<|channel|>analysis<|message|>Call it.<|end|><|start|>assistant to=functions.get_time<|channel|>commentary json<|message|>{}",
			"Call it.", "", []string{`get_time {}`}},
		{"call with no arguments",
			"<|channel|>commentary to=functions.ping <|constrain|>json<|message|><|call|>",
			"", "", []string{`ping {}`}},
		{"preamble, then a call",
			"<|channel|>commentary<|message|>Let me check.<|end|><|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|> {\"a\": [1, \"<|x\"]} <|call|>",
			"", "Let me check.", []string{`f {"a": [1, "<|x"]}`}},
		{"final only", "<|channel|>final<|message|>Hi!<|return|>", "", "Hi!", nil},
		{"two analysis messages",
			"<|channel|>analysis<|message|>First.<|end|><|start|>assistant<|channel|>analysis<|message|> Second.<|end|><|start|>assistant<|channel|>final<|message|>Done<|return|>",
			"First. Second.", "Done", nil},
		{"not harmony", "Just text, no channels.", "", "Just text, no channels.", nil},
		{"not harmony, starts like a token", "<|im_start|>hi", "", "<|im_start|>hi", nil},
		{"bad call arguments",
			"<|channel|>analysis<|message|>Try.<|end|><|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{bad<|call|>",
			"Try.", "{bad", nil},
		{"arguments not an object",
			"<|channel|>commentary to=functions.f <|constrain|>json<|message|>[1, 2]<|call|>",
			"", "[1, 2]", nil},
		{"unfinished call",
			"<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\":",
			"", `{"a":`, nil},
		{"text that looks like control tokens",
			"<|channel|>final<|message|>a <| b < c <|en d <|return<|return|>",
			"", "a <| b < c <|en d <|return", nil},
		{"stopped inside reasoning", "<|channel|>analysis<|message|>Thinking <|e", "Thinking <|e", "", nil},
		{"built-in tool recipient",
			"<|channel|>analysis to=browser.search code<|message|>{\"query\": \"x\"}<|call|>",
			`{"query": "x"}`, "", nil},
		{"unfinished header", "<|channel|>analysis<|message|>Hm.<|end|><|start|>assistant<|chan", "Hm.", "", nil},
		{"UTF-8", "<|channel|>analysis<|message|>Ça va ?<|end|><|start|>assistant<|channel|>final<|message|>日本語 ✓<|return|>",
			"Ça va ?", "日本語 ✓", nil},
	}
	for _, c := range cases {
		want := harmonyResult{reasoning: c.reasoning, content: c.content, calls: c.calls}
		check := func(cuts []int) {
			t.Helper()
			got := parseHarmony(t, c.text, cuts)
			got.finished = false
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, cut at %v:\n got  %+v\n want %+v", c.name, cuts, got, want)
			}
		}
		check(nil)
		var all []int
		for i := 1; i < len(c.text); i++ {
			check([]int{i})
			all = append(all, i)
			if len(c.text) <= 80 {
				for j := i + 1; j < len(c.text); j++ {
					check([]int{i, j})
				}
			}
		}
		check(all)
	}
}

// TestHarmonyStreams: reasoning and content go out as they arrive, held back only while they
// may be the beginning of a control token, and an answer that ends with its terminator leaves
// nothing for Finish.
func TestHarmonyStreams(t *testing.T) {
	p := NewHarmonyParser()
	steps := []struct {
		push            string
		reasoning, text string
	}{
		{"<|channel|>", "", ""},
		{"analysis<|message|>", "", ""},
		{"The user", "The user", ""},
		{" asks. <|", " asks. ", ""},
		{"en", "", ""},
		{"d|>", "", ""},
		{"<|start|>assistant<|channel|>final<|message|>Four", "", "Four"},
		{".<|return|>", "", "."},
	}
	for _, s := range steps {
		var r, c strings.Builder
		for _, e := range p.Push(s.push) {
			r.WriteString(e.Reasoning)
			c.WriteString(e.Text)
		}
		if r.String() != s.reasoning || c.String() != s.text {
			t.Fatalf("after %q: reasoning %q content %q, want %q %q", s.push, r.String(), c.String(), s.reasoning, s.text)
		}
	}
	if ev := p.Finish(); len(ev) != 0 {
		t.Fatalf("Finish after <|return|>: %+v", ev)
	}
	// The same for every answer of TestHarmony that ends with its terminator, cut anywhere.
	for _, text := range []string{
		"<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>final<|message|>y<|return|>",
		"<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": 1}<|call|>",
	} {
		for i := 1; i < len(text); i++ {
			if r := parseHarmony(t, text, []int{i}); !r.finished {
				t.Fatalf("%q cut at %d: Finish still had events", text, i)
			}
		}
	}
}

// TestHarmonyNotHarmonyIsImmediate: text that cannot begin a harmony header goes out at once
// rather than being held for a <|message|> that will not come.
func TestHarmonyNotHarmonyIsImmediate(t *testing.T) {
	p := NewHarmonyParser()
	if ev := p.Push("Hello"); len(ev) != 1 || ev[0].Text != "Hello" {
		t.Fatalf("Push(Hello) = %+v", ev)
	}
	q := NewHarmonyParser()
	long := "<|start|>assistant" + strings.Repeat("x", maxHarmonyHeader)
	if ev := q.Push(long); len(ev) != 1 || ev[0].Text != long {
		t.Fatalf("a header longer than %d bytes is held: %+v", maxHarmonyHeader, ev)
	}
}
