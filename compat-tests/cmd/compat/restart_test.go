package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestServeRestartRefuses: the restart endpoint restarts only a node of a
// running target, on POST, and says why not otherwise.
func TestServeRestartRefuses(t *testing.T) {
	h := &harness{targets: map[string]*broker{
		"strata": {name: "strata", addr: "127.0.0.1:1", nodes: []*node{{id: 1}}},
		"kafka":  {name: "kafka"},
	}}
	for _, c := range []struct {
		method, query string
		code          int
	}{
		{http.MethodGet, "target=strata", http.StatusMethodNotAllowed},
		{http.MethodPost, "target=nope", http.StatusBadRequest},
		{http.MethodPost, "target=kafka", http.StatusBadRequest},
		{http.MethodPost, "target=strata&node=2", http.StatusBadRequest},
		{http.MethodPost, "target=strata&node=x", http.StatusBadRequest},
	} {
		w := httptest.NewRecorder()
		h.serveRestart(w, httptest.NewRequest(c.method, "/restart?"+c.query, nil))
		if w.Code != c.code {
			t.Errorf("%s ?%s: %d %s, want %d", c.method, c.query, w.Code, w.Body, c.code)
		}
	}
	if !isRestartScenario("group_consumer_restart") || isRestartScenario("group_consumer_protocol") {
		t.Error("isRestartScenario")
	}
}
