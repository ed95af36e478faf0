package schemacheck

import "testing"

// TestValidate: the checker the structured-output tests rely on accepts what the schema allows
// and refuses each kind of violation, so a test that uses it can fail.
func TestValidate(t *testing.T) {
	schema := `{"$defs":{"tag":{"enum":["a","b",1.0]}},"type":"object","properties":{"name":{"type":"string","minLength":1,"maxLength":3},
		"n":{"type":"integer"},"tags":{"type":"array","items":{"$ref":"#/$defs/tag"},"minItems":1,"maxItems":2},
		"u":{"anyOf":[{"type":"null"},{"const":{"k":[true]}}]}},"required":["name"],"additionalProperties":false}`
	for _, ok := range []string{`{"name":"abc"}`, `{"name":"é","n":-3,"tags":["a",1],"u":null}`, `{"name":"x","u":{"k":[true]},"n":2.0}`} {
		if err := Validate([]byte(schema), []byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{`{}`, `{"name":""}`, `{"name":"abcd"}`, `{"name":"a","n":1.5}`, `{"name":"a","tags":[]}`,
		`{"name":"a","tags":["c"]}`, `{"name":"a","tags":["a","b","a"]}`, `{"name":"a","u":{"k":[false]}}`, `{"name":"a","x":1}`,
		`[]`, `{"name":"a"} 1`, `{"name":`} {
		if err := Validate([]byte(schema), []byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
