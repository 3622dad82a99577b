package nodeapi

import (
	"encoding/json"
	"net/http"
)

// serveSpec answers GET /spec/ as the kubelet does: cAdvisor's MachineInfo of the node as
// JSON (nodes/spec in authorization).
func (s *Server) serveSpec(w http.ResponseWriter, _ *http.Request) {
	info, err := s.cfg.Machine()
	if err != nil {
		http.Error(w, "failed to get machine info: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(info) // a write error is the client gone
}

// serveConfigz answers as the kubelet's /configz: {"kubeletconfig": CONFIGURATION}.
func (s *Server) serveConfigz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"kubeletconfig": s.cfg.Configz()}) // a write error is the client gone
}
