package rest

import (
	"embed"
	"io/fs"
	"net/http"
)

// The web dashboard: plain HTML, CSS and JavaScript embedded in the binary
// (no build step, nothing fetched at run time), served at / and /web/ by
// every JobManager's REST endpoint. Its pages read the REST API with URLs
// relative to the page, so it works where the endpoint is mounted under a
// prefix, as behind YARN's ResourceManager web proxy
// (/proxy/<application>/).
//
//go:embed dashboard
var dashboardFiles embed.FS

func (s *Server) dashboardRoutes(mux *http.ServeMux) {
	web, err := fs.Sub(dashboardFiles, "dashboard")
	if err != nil { // a constant directory of the embedded tree
		panic(err)
	}
	index, err := fs.ReadFile(web, "index.html")
	if err != nil {
		panic(err)
	}
	files := http.StripPrefix("/web/", http.FileServerFS(web))
	mux.Handle("/{$}", route{http.MethodGet: func(w http.ResponseWriter, r *http.Request) {
		dashboardHeaders(w)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(index)
	}})
	mux.Handle("/web/", route{http.MethodGet: func(w http.ResponseWriter, r *http.Request) {
		dashboardHeaders(w)
		files.ServeHTTP(w, r)
	}})
}

// dashboardHeaders: the dashboard is revalidated on every load, so that a
// new JobManager version serves its own pages, and is not framed.
func dashboardHeaders(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
}
