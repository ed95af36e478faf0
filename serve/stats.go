package serve

import (
	"net/http"
	"strings"
	"sync/atomic"
)

// counters are the server's running totals, updated atomically.
type counters struct {
	requests         atomic.Uint64
	generations      atomic.Uint64
	cancelled        atomic.Uint64
	timedOut         atomic.Uint64
	rejected         atomic.Uint64
	failed           atomic.Uint64
	promptTokens     atomic.Uint64
	completionTokens atomic.Uint64
}

// Stats is a snapshot of the server's activity.
type Stats struct {
	// Running generations and Waiting requests right now.
	Running int `json:"running"`
	Waiting int `json:"waiting"`
	// Requests answered, of any kind and status.
	Requests uint64 `json:"requests"`
	// Generations that ended normally (end of sequence, stop string, length or context).
	Generations uint64 `json:"generations"`
	// Cancelled generations and waits: the client disconnected first.
	Cancelled uint64 `json:"cancelled"`
	// TimedOut requests: they ran into the per-request timeout.
	TimedOut uint64 `json:"timed_out"`
	// Rejected requests: the queue was full (429).
	Rejected uint64 `json:"rejected"`
	// Failed generations: the backend returned an error (500).
	Failed uint64 `json:"failed"`
	// PromptTokens and CompletionTokens processed by finished, cancelled and timed-out
	// generations alike.
	PromptTokens     uint64 `json:"prompt_tokens"`
	CompletionTokens uint64 `json:"completion_tokens"`
}

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() Stats {
	running, waiting := s.slots.counts()
	c := &s.stats
	return Stats{Running: running, Waiting: waiting, Requests: c.requests.Load(),
		Generations: c.generations.Load(), Cancelled: c.cancelled.Load(), TimedOut: c.timedOut.Load(),
		Rejected: c.rejected.Load(), Failed: c.failed.Load(),
		PromptTokens: c.promptTokens.Load(), CompletionTokens: c.completionTokens.Load()}
}

// health answers GET /health: 200 {"status":"ok", ...counters} while serving, 503 while
// shutting down, so a load balancer stops sending requests before the listener closes.
func (s *Server) health(w http.ResponseWriter, r *http.Request, rec *record) {
	body := struct {
		Status string `json:"status"`
		Model  string `json:"model"`
		Stats
	}{"ok", s.modelID, s.Stats()}
	status := http.StatusOK
	if s.draining.Load() {
		body.Status, status = "shutting down", http.StatusServiceUnavailable
	}
	s.writeJSON(w, status, body)
}

// modelObject describes the served model.
func (s *Server) modelObject() modelObject {
	return modelObject{ID: s.modelID, Object: "model", Created: s.created, OwnedBy: "anepack",
		Anepack: &modelExtras{Architecture: s.model.Config.Architecture, DType: s.model.DType.String(),
			Context: s.context, Parallel: len(s.slots.all), Backend: s.backend.Name()}}
}

// models answers GET /v1/models with the one model.
func (s *Server) models(w http.ResponseWriter, r *http.Request, rec *record) {
	s.writeJSON(w, http.StatusOK, modelList{Object: "list", Data: []modelObject{s.modelObject()}})
}

// model1 answers GET /v1/models/{id}: the model, or 404 for another id. Ids with a slash
// ("Qwen/Qwen2.5-0.5B-Instruct") arrive as the rest of the path.
func (s *Server) model1(w http.ResponseWriter, r *http.Request, rec *record) {
	id := strings.TrimPrefix(r.URL.Path, "/v1/models/")
	if !s.knownModel(id) {
		s.writeError(w, rec, modelNotFound(id, s.modelID))
		return
	}
	s.writeJSON(w, http.StatusOK, s.modelObject())
}
