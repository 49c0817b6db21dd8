package s3emu

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
)

// StatsReport is what GET /_s3emu/stats answers: the counters and, with
// ?keys=1, the body bytes sent per "bucket/key".
type StatsReport struct {
	Stats
	KeyBytes map[string]int64 `json:",omitempty"`
}

// serveStats answers GET /_s3emu/stats (a path no bucket can have), so a
// test driving a standalone emulator can read its counters; ?reset=1 resets
// them after reading.
func (s *Server) serveStats(w http.ResponseWriter, r *http.Request) {
	rep := StatsReport{Stats: s.Stats()}
	if r.URL.Query().Get("keys") != "" {
		rep.KeyBytes = map[string]int64{}
		s.keyBytes.Range(func(k, v any) bool {
			rep.KeyBytes[k.(string)] = v.(*atomic.Int64).Load()
			return true
		})
	}
	if r.URL.Query().Get("reset") != "" {
		s.ResetStats()
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(rep)
}
