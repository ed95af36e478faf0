package arch

import (
	"encoding/json"
	"math"
)

// Rotary embedding parameters come in two spellings, both read here:
//
//	transformers <= 4: "rope_theta": 5e5, "rope_scaling": {"rope_type" (or "type"): "llama3", "factor": 32, ...}
//	transformers >= 5: "rope_parameters": {"rope_type": "llama3", "rope_theta": 5e5, "factor": 32, ...}
//
// plus "partial_rotary_factor" at the top level or inside rope_parameters. A rope type of
// "default" (or no scaling object at all) means the plain inverse frequencies.

// Rope scaling types.
const (
	RopeDefault = "default"
	RopeLlama3  = "llama3" // Llama 3.1+: long wavelengths divided by factor, a smooth band between
	RopeLinear  = "linear" // every frequency divided by factor (Gemma 3's global layers)
)

// rope reads the rotary parameters into c.
func (p *configParser) rope(c *Config) {
	c.RopeTheta = p.positiveFloat("rope_theta", 10000)
	c.PartialRotaryFactor = p.fraction("partial_rotary_factor", p.raw[p.spelling("partial_rotary_factor")])
	scaling, field := p.object("rope_scaling"), "rope_scaling"
	if params := p.object("rope_parameters"); params != nil && params[FullAttention] == nil {
		// (Parameters keyed by layer type are the family's to read: Gemma 3.)
		scaling, field = params, "rope_parameters"
		if raw, ok := params["rope_theta"]; ok {
			if f, ok := p.numberOf(field+".rope_theta", raw); ok {
				c.RopeTheta = f
			}
		}
		if raw, ok := params["partial_rotary_factor"]; ok {
			c.PartialRotaryFactor = p.fraction(field+".partial_rotary_factor", raw)
		}
	}
	if scaling == nil || p.err != nil {
		return
	}
	var kind string
	for _, key := range []string{"rope_type", "type"} {
		if raw, ok := scaling[key]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &kind); err != nil {
				p.fail(field+"."+key, "expected a string, got %s", raw)
				return
			}
			break
		}
	}
	switch kind {
	case "":
		p.fail(field+".rope_type", "missing; expected %q or %q", RopeDefault, RopeLlama3)
		return
	case RopeDefault:
		return
	}
	rs := &RopeScaling{Type: kind}
	num := func(key string, required bool) float64 {
		raw, ok := scaling[key]
		if !ok || string(raw) == "null" {
			if required && kind == RopeLlama3 {
				p.fail(field+"."+key, "missing; rope type %q needs it", kind)
			}
			return 0
		}
		f, _ := p.numberOf(field+"."+key, raw)
		return f
	}
	rs.Factor = num("factor", true)
	if kind == RopeLinear && rs.Factor == 0 {
		p.fail(field+".factor", "missing; rope type %q needs it", kind)
	}
	rs.LowFreqFactor = num("low_freq_factor", true)
	rs.HighFreqFactor = num("high_freq_factor", true)
	orig := num("original_max_position_embeddings", true)
	if orig != math.Trunc(orig) || orig < 0 || orig > MaxPosition {
		p.fail(field+".original_max_position_embeddings", "expected a positive integer, got %v", orig)
	}
	rs.OriginalMaxPositionEmbeddings = int(orig)
	c.RopeScaling = rs
}

// fraction reads an optional number in (0, 1]; absent is 0 (meaning 1).
func (p *configParser) fraction(field string, raw json.RawMessage) float64 {
	if len(raw) == 0 || string(raw) == "null" || p.err != nil {
		return 0
	}
	f, ok := p.numberOf(field, raw)
	if ok && !(f > 0 && f <= 1) {
		p.fail(field, "expected a number in (0, 1], got %v", f)
	}
	return f
}

// checkRope validates the scaling against what the family supports and what the formula needs.
func checkRope(fam *Family, c *Config) error {
	rs := c.RopeScaling
	if rs == nil {
		return nil
	}
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: "rope_scaling." + field, Msg: sprintf(format, args...)}
	}
	if !contains(fam.RopeTypes, rs.Type) {
		allowed := append([]string{RopeDefault}, fam.RopeTypes...)
		return bad("rope_type", "%q is not supported for %s; expected %s", rs.Type, fam.Architecture, quoteList(allowed))
	}
	if !(rs.Factor >= 1) || rs.Factor > 1e6 {
		return bad("factor", "%v; expected a number >= 1", rs.Factor)
	}
	if rs.Type != RopeLlama3 {
		return nil
	}
	switch {
	case !(rs.LowFreqFactor > 0) || !(rs.HighFreqFactor > rs.LowFreqFactor) || rs.HighFreqFactor > 1e6:
		return bad("high_freq_factor", "%v with low_freq_factor %v; expected 0 < low_freq_factor < high_freq_factor", rs.HighFreqFactor, rs.LowFreqFactor)
	case rs.OriginalMaxPositionEmbeddings <= 0 || rs.OriginalMaxPositionEmbeddings > MaxPosition:
		return bad("original_max_position_embeddings", "%d; expected a positive integer", rs.OriginalMaxPositionEmbeddings)
	}
	return nil
}
