package toolcall

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// parse feeds text in pieces cut at the given byte offsets (nil: whole) and returns the
// content and the calls.
func parse(f Format, text string, cuts ...int) (string, []Call) {
	p := NewParser(f)
	var ev []Event
	last := 0
	for _, c := range append(cuts, len(text)) {
		if c < last || c > len(text) {
			continue
		}
		ev = append(ev, p.Push(text[last:c])...)
		last = c
	}
	ev = append(ev, p.Finish()...)
	var content strings.Builder
	var calls []Call
	for _, e := range ev {
		if e.Call != nil {
			calls = append(calls, *e.Call)
			continue
		}
		content.WriteString(e.Text)
	}
	return content.String(), calls
}

func names(calls []Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Name+" "+c.Arguments)
	}
	return out
}

func TestHermes(t *testing.T) {
	cases := []struct {
		text, content string
		calls         []string
	}{
		{"Hello there.", "Hello there.", nil},
		{"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "",
			[]string{`get_weather {"city": "Paris"}`}},
		{"Let me look.\n\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"arguments\": {\"x\": [1, {\"y\": \"}\"}]}, \"name\": \"b\"}\n</tool_call>\n",
			"Let me look.", []string{`a {}`, `b {"x": [1, {"y": "}"}]}`}},
		// Arguments as a JSON string holding an object, and no arguments at all.
		{`<tool_call>{"name": "f", "arguments": "{\"q\": 1}"}</tool_call>`, "", []string{`f {"q": 1}`}},
		{`<tool_call>{"name": "f"}</tool_call>`, "", []string{`f {}`}},
		// Malformed: the text comes back as content, the good call still counts.
		{`<tool_call>{"name": "f", "arguments": {"a": }</tool_call>`, `<tool_call>{"name": "f", "arguments": {"a": }</tool_call>`, nil},
		{`<tool_call>{"arguments": {}}</tool_call>`, `<tool_call>{"arguments": {}}</tool_call>`, nil},
		{`<tool_call>{"name": "f", "arguments": [1]}</tool_call>`, `<tool_call>{"name": "f", "arguments": [1]}</tool_call>`, nil},
		{`<tool_call>{"name": "ok", "arguments": {}}</tool_call><tool_call>{"name": 5}</tool_call>`, `<tool_call>{"name": 5}</tool_call>`, []string{`ok {}`}},
		{`<tool_call>{"name": "f", "arguments": {"a": 1}}`, `<tool_call>{"name": "f", "arguments": {"a": 1}}`, nil}, // never closed
		{`a <tool_ca`, `a <tool_ca`, nil},
		{`x < y <tool_call`, `x < y <tool_call`, nil},
		{"<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>\nDone.", "Done.", []string{`f {}`}},
	}
	for _, c := range cases {
		content, calls := parse(Hermes, c.text)
		if content != c.content || !reflect.DeepEqual(names(calls), c.calls) {
			t.Errorf("%q: content %q calls %q; want %q %q", c.text, content, names(calls), c.content, c.calls)
		}
		// Fed one byte at a time (a stream of tiny tokens), the result is the same.
		var cuts []int
		for i := 1; i < len(c.text); i++ {
			cuts = append(cuts, i)
		}
		content2, calls2 := parse(Hermes, c.text, cuts...)
		if content2 != content || !reflect.DeepEqual(names(calls2), names(calls)) {
			t.Errorf("%q byte by byte: content %q calls %q; whole: %q %q", c.text, content2, names(calls2), content, names(calls))
		}
		for _, call := range calls2 {
			if strings.Join(call.Pieces, "") != call.Arguments {
				t.Errorf("%q: pieces %q do not make %q", c.text, call.Pieces, call.Arguments)
			}
		}
	}
}

// TestPieces: arguments come back cut where the text arrived, as a stream would send them.
func TestPieces(t *testing.T) {
	text := `<tool_call>{"name": "f", "arguments": {"city": "Paris", "n": 2}}</tool_call>`
	i := strings.Index(text, `{"city"`)
	_, calls := parse(Hermes, text, i+3, i+12, i+20)
	if len(calls) != 1 {
		t.Fatalf("calls %v", calls)
	}
	want := []string{text[i : i+3], text[i+3 : i+12], text[i+12 : i+20], `{"city": "Paris", "n": 2}`[20:]}
	if !reflect.DeepEqual(calls[0].Pieces, want) {
		t.Fatalf("pieces %q; want %q", calls[0].Pieces, want)
	}
}

func TestLlama3JSON(t *testing.T) {
	cases := []struct {
		text, content string
		calls         []string
	}{
		{"The answer is 4.", "The answer is 4.", nil},
		{`{"name": "get_weather", "parameters": {"city": "Paris"}}`, "", []string{`get_weather {"city": "Paris"}`}},
		{` <|python_tag|>{"name": "a", "parameters": {}}; {"name": "b", "arguments": {"x": "{;}"}}`, "", []string{`a {}`, `b {"x": "{;}"}`}},
		{`{"name": "a", "parameters": {}} and more`, "and more", []string{`a {}`}},
		{`{"nam": "a"}`, `{"nam": "a"}`, nil},
		{`{"name": "a", "parameters": {`, `{"name": "a", "parameters": {`, nil},
		{`Sure: {"name": "a", "parameters": {}}`, `Sure: {"name": "a", "parameters": {}}`, nil}, // calls only at the start
	}
	for _, c := range cases {
		for _, cuts := range [][]int{nil, {1, 2, 3, 5, 8, 13, 21, 34}} {
			content, calls := parse(Llama3JSON, c.text, cuts...)
			if content != c.content || !reflect.DeepEqual(names(calls), c.calls) {
				t.Errorf("%q (cuts %v): content %q calls %q; want %q %q", c.text, cuts, content, names(calls), c.content, c.calls)
			}
		}
	}
}

func TestDetectAndFormats(t *testing.T) {
	if Detect("answer in <tool_call></tool_call>", "probe", false) != Hermes || Detect(`{"name": "probe"}`, "probe", true) != Llama3JSON ||
		Detect(`{"name": "probe"}`, "probe", false) != None || Detect("plain", "probe", true) != None {
		t.Fatal("Detect")
	}
	for _, f := range []Format{None, Hermes, Llama3JSON} {
		if g, err := ParseFormat(f.String()); err != nil || g != f {
			t.Errorf("%v: %v %v", f, g, err)
		}
	}
	if _, err := ParseFormat("mistral"); err == nil {
		t.Error("ParseFormat(mistral): no error")
	}
}

// FuzzParser: any text, fed in any pieces, never panics; whole and piecewise feeding agree;
// every call has a name and arguments that are a JSON object, cut into pieces that make it up.
func FuzzParser(f *testing.F) {
	f.Add(`<tool_call>{"name": "f", "arguments": {"a": "</tool_call>"}}</tool_call>`, uint8(3), false)
	f.Add(`{"name": "a", "parameters": {}}; {"name": "b", "parameters": {"x": [1, 2]}}`, uint8(5), true)
	f.Add(" <tool_call>\n{\"name\":\"x\",\"arguments\":\"{}\"}\n</tool_call>\n<tool_", uint8(1), false)
	f.Add(`{"name": "\ud800", "parameters": {"a": "\"}"}}`, uint8(2), true)
	f.Fuzz(func(t *testing.T, text string, step uint8, llama bool) {
		format := Hermes
		if llama {
			format = Llama3JSON
		}
		var cuts []int
		for i := int(step%16) + 1; i < len(text); i += int(step%16) + 1 {
			cuts = append(cuts, i)
		}
		c1, calls1 := parse(format, text)
		c2, calls2 := parse(format, text, cuts...)
		if c1 != c2 || !reflect.DeepEqual(names(calls1), names(calls2)) {
			t.Fatalf("%q: whole %q %q; in pieces of %d %q %q", text, c1, names(calls1), step%16+1, c2, names(calls2))
		}
		for _, c := range calls2 {
			var obj map[string]any
			if c.Name == "" || json.Unmarshal([]byte(c.Arguments), &obj) != nil || strings.Join(c.Pieces, "") != c.Arguments {
				t.Fatalf("%q: bad call %+v", text, c)
			}
		}
		if len(calls1) == 0 && strings.TrimSpace(c1) != strings.TrimSpace(text) && format == Hermes {
			t.Fatalf("%q: no call, yet content %q is not the text", text, c1)
		}
	})
}
