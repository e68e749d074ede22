package rest

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/sluice/sluice/conf"
)

// changesState reports whether a request may change the cluster: any
// method but GET, HEAD and OPTIONS, and Flink's GET forms of cancel and
// stop that YARN's proxy forwards (/jobs/:id/yarn-cancel, yarn-stop).
func changesState(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return strings.HasSuffix(r.URL.Path, "/yarn-cancel") || strings.HasSuffix(r.URL.Path, "/yarn-stop")
	}
	return true
}

// authorized decides whether a request may be served: one that reads is
// always; one that changes state needs the token (Authorization: Bearer),
// or, for the GET forms YARN's web proxy forwards, to come from a trusted
// proxy, which authenticated its user.
func (s *Server) authorized(r *http.Request) (bool, string) {
	if len(s.cfg.Token) == 0 || !changesState(r) {
		return true, ""
	}
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, _ := strings.Cut(h, " ")
		if strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), s.cfg.Token) == 1 {
			return true, ""
		}
		return false, "the request's token is not this JobManager's"
	}
	if r.Method == http.MethodGet && s.cfg.TrustedProxy != nil {
		if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil && s.cfg.TrustedProxy(net.ParseIP(host)) {
			return true, ""
		}
	}
	return false, "the request carries no token"
}

// authenticated refuses the requests authorized does not allow, with 401
// and Flink's error shape.
func (s *Server) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, why := s.authorized(r); !ok {
			s.log.Warn("REST request refused", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "reason", why)
			w.Header().Set("WWW-Authenticate", `Bearer realm="sluice"`)
			writeError(w, http.StatusUnauthorized, fmt.Sprintf("%s %s changes the cluster and needs this JobManager's REST token "+
				"(Authorization: Bearer, from %s; on YARN the sluice commands read it from the application's staging directory): %s",
				r.Method, r.URL.Path, conf.RESTTokenFile.Key(), why))
			return
		}
		next.ServeHTTP(w, r)
	})
}
