package hub

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRateLimit(t *testing.T) {
	for v, want := range map[string]int64{
		`"api";r=0;t=55`:                   55,
		`"api";r=10;t=3`:                   3,
		`"api";r=10;t=3, "pages";r=0;t=40`: 40,
		`"a";r=0;t=5, "b";r=0;t=9`:         9,
		`garbage`:                          -1,
		`"api";r=0`:                        -1,
	} {
		got, ok := parseRateLimit(v)
		if (want < 0) == ok || (ok && got != want) {
			t.Errorf("parseRateLimit(%q) = %d, %v; want %d", v, got, ok, want)
		}
	}
}

func TestServerWait(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := http.Header{}
	h.Set("Retry-After", "7")
	if d, ok := serverWait(h, now); !ok || d != 7*time.Second {
		t.Errorf("Retry-After 7: %v %v", d, ok)
	}
	h.Set("Retry-After", now.Add(90*time.Second).Format(http.TimeFormat))
	if d, ok := serverWait(h, now); !ok || d != 90*time.Second {
		t.Errorf("Retry-After date: %v %v", d, ok)
	}
	// RateLimit wins, and waits one second past the reset as huggingface_hub does.
	h.Set("RateLimit", `"api";r=0;t=55`)
	if d, ok := serverWait(h, now); !ok || d != 56*time.Second {
		t.Errorf("RateLimit: %v %v", d, ok)
	}
	if _, ok := serverWait(http.Header{}, now); ok {
		t.Error("no header, but a wait")
	}
}

func TestBackoffDelays(t *testing.T) {
	b := Backoff{}.withDefaults()
	var got []time.Duration
	for i := 0; i < 6; i++ {
		got = append(got, b.delay(i))
	}
	want := []time.Duration{1, 2, 4, 8, 8, 8}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("delays %v, want 1s 2s 4s 8s 8s 8s", got)
		}
	}
	if b.Retries != 5 {
		t.Errorf("default retries %d", b.Retries)
	}
}
