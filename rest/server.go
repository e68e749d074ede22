package rest

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice/sluice/rest/restapi"

	"github.com/sluice/sluice/conf"
	"github.com/sluice/sluice/internal/clock"
)

// Config configures a Server. Every field has a usable zero value.
type Config struct {
	// BindAddress is the host to listen on (rest.bind-address); "" listens
	// on every interface.
	BindAddress string
	// Port is the port to listen on (rest.port); 0 picks a free one (see
	// Server.Addr).
	Port int
	// TLS, if set, serves HTTPS with it (security.ssl.rest.*, built by
	// security/tlsconf). Default: nil, plain HTTP.
	TLS *tls.Config
	// Version and Revision of Sluice, reported as Flink's flink-version and
	// flink-commit. Default: what the binary's build recorded (BuildVersion).
	Version, Revision string
	// Cluster is the cluster's configuration, listed by GET
	// /jobmanager/config with the values of sensitive keys (passwords,
	// secrets, tokens) masked. Nil lists nothing.
	Cluster *conf.Configuration
	// LogDir is the directory of the JobManager's log files, served by GET
	// /jobmanager/logs, /jobmanager/log and /jobmanager/stdout (env.log.dir;
	// on YARN, the container's log directory). "" serves none.
	LogDir string
	// LogFile and StdoutFile name the files of LogDir that GET
	// /jobmanager/log and /jobmanager/stdout serve. Default
	// "jobmanager.log" and "jobmanager.out".
	LogFile, StdoutFile string
	// UploadDir is where received job binaries are staged during a
	// submission. Default os.TempDir().
	UploadDir string
	// MaxContentLength bounds a request body in bytes
	// (rest.server.max-content-length). Default 256 MiB.
	MaxContentLength int64
	// AsyncStoreDuration is how long the outcome of a completed savepoint,
	// stop or checkpoint stays available to status polls
	// (rest.async.store-duration). Default 5 minutes.
	AsyncStoreDuration time.Duration
	// FlameGraph configures GET .../vertices/:vertexid/flamegraph
	// (rest.flamegraph.*). Default: disabled, as in Flink.
	FlameGraph FlameGraphConfig
	// BackendTimeout bounds each Backend call of a request that is not an
	// asynchronous operation, and of a metrics scrape. Default 30 s.
	BackendTimeout time.Duration
	// Clock gives the server's time ("now" in answers, expiry of
	// operation outcomes). Default the system clock.
	Clock clock.Clock
	// Log receives request failures and panics. Default: discard.
	Log *slog.Logger
	// Token, if set, is required (Authorization: Bearer) of every request
	// that changes state (security.rest.token-file); reading stays open.
	Token []byte
	// TrustedProxy, with Token, reports whether a peer address is a web
	// proxy (YARN's) whose GET requests that change state (yarn-cancel,
	// yarn-stop) are served without the token: the proxy authenticated
	// its user. Nil trusts none.
	TrustedProxy func(net.IP) bool
}

// ConfigFrom reads the REST settings of a cluster configuration: rest.port,
// rest.bind-address, rest.server.max-content-length,
// rest.async.store-duration, rest.flamegraph.* and env.log.dir; Cluster is
// set to c.
func ConfigFrom(c *conf.Configuration) Config {
	return Config{
		BindAddress:        conf.Get(c, conf.RESTBindAddress),
		Port:               conf.Get(c, conf.RESTPort),
		MaxContentLength:   int64(conf.Get(c, conf.RESTServerMaxContentLength)),
		AsyncStoreDuration: conf.Get(c, conf.RESTAsyncStoreDuration),
		FlameGraph: FlameGraphConfig{
			Enabled:         conf.Get(c, conf.RESTFlameGraphEnabled),
			CleanupInterval: conf.Get(c, conf.RESTFlameGraphCleanupInterval),
			RefreshInterval: conf.Get(c, conf.RESTFlameGraphRefreshInterval),
			NumSamples:      conf.Get(c, conf.RESTFlameGraphNumSamples),
			Delay:           conf.Get(c, conf.RESTFlameGraphDelay),
			StackDepth:      conf.Get(c, conf.RESTFlameGraphStackDepth),
		},
		LogDir:  conf.Get(c, conf.LogDir),
		Cluster: c,
	}
}

func (c *Config) defaults() {
	if c.Version == "" || c.Revision == "" {
		v, r := restapi.BuildVersion()
		if c.Version == "" {
			c.Version = v
		}
		if c.Revision == "" {
			c.Revision = r
		}
	}
	if c.LogFile == "" {
		c.LogFile = "jobmanager.log"
	}
	if c.StdoutFile == "" {
		c.StdoutFile = "jobmanager.out"
	}
	if c.UploadDir == "" {
		c.UploadDir = os.TempDir()
	}
	if c.MaxContentLength <= 0 {
		c.MaxContentLength = int64(conf.RESTServerMaxContentLength.Default())
	}
	if c.AsyncStoreDuration <= 0 {
		c.AsyncStoreDuration = conf.RESTAsyncStoreDuration.Default()
	}
	c.FlameGraph.defaults()
	if c.BackendTimeout <= 0 {
		c.BackendTimeout = 30 * time.Second
	}
	if c.Clock == nil {
		c.Clock = clock.System{}
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// Server is the REST endpoint of a JobManager: Flink's REST API over a
// Backend, and Prometheus metrics at /metrics. Every path is also served
// under the version prefix /v1.
//
// A Server owns the goroutine that serves HTTP and the goroutines running
// asynchronous operations; Shutdown or Close stops them all.
type Server struct {
	cfg     Config
	backend Backend
	log     *slog.Logger
	ln      net.Listener
	http    *http.Server
	handler http.Handler
	ops     *operations
	jars    jars
	flames  flameGraphs

	// ctx lives as long as the server; asynchronous operations run under it.
	ctx      context.Context
	cancel   context.CancelFunc
	serving  sync.WaitGroup // the serve goroutine
	serveErr error          // set before serving.Done

	closeOnce sync.Once
	closeErr  error
}

// New listens on cfg.BindAddress:cfg.Port and serves b until Shutdown or
// Close. A failure to listen is returned, naming the address.
func New(cfg Config, b Backend) (*Server, error) {
	addr := net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rest: listening on %s (rest.bind-address, rest.port): %w", addr, err)
	}
	return Serve(cfg, b, ln), nil
}

// Serve serves b on ln (which it closes) until Shutdown or Close; a YARN
// ApplicationMaster opens its listener before it registers.
func Serve(cfg Config, b Backend, ln net.Listener) *Server {
	s := newServer(cfg, b)
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	s.ln = ln
	s.http = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
	}
	s.serving.Add(1)
	go func() {
		defer s.serving.Done()
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.serveErr = err
			s.log.Error("REST server stopped", "error", err)
		}
	}()
	s.log.Info("REST endpoint listening", "address", ln.Addr().String(), "tls", cfg.TLS != nil)
	return s
}

// NewHandler returns the server's HTTP handler without listening, for
// embedding in another server or for tests. Close the returned closer to
// stop asynchronous operations it started.
func NewHandler(cfg Config, b Backend) (http.Handler, func()) {
	s := newServer(cfg, b)
	return s.handler, s.stop
}

func newServer(cfg Config, b Backend) *Server {
	cfg.defaults()
	s := &Server{cfg: cfg, backend: b, log: cfg.Log}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.ops = newOperations(cfg.Clock, cfg.AsyncStoreDuration)
	s.handler = s.routes()
	return s
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL is the server's base URL, http://host:port (https with TLS).
func (s *Server) URL() string {
	host, port, _ := net.SplitHostPort(s.ln.Addr().String())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	scheme := "http://"
	if s.cfg.TLS != nil {
		scheme = "https://"
	}
	return scheme + net.JoinHostPort(host, port)
}

// Shutdown stops accepting requests, waits for requests in flight until ctx
// ends (then closes their connections and returns ctx's error), then
// cancels running asynchronous operations and waits for them.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.shutdown(func() error {
		if err := s.http.Shutdown(ctx); err != nil {
			return errors.Join(err, s.http.Close())
		}
		return nil
	})
}

// Close stops the server at once: open connections are closed, running
// asynchronous operations cancelled and waited for.
func (s *Server) Close() error { return s.shutdown(s.http.Close) }

func (s *Server) shutdown(stopHTTP func() error) error {
	s.closeOnce.Do(func() {
		err := stopHTTP()
		s.serving.Wait()
		s.stop()
		s.closeErr = errors.Join(err, s.serveErr)
	})
	return s.closeErr
}

// stop cancels running asynchronous operations and waits for them.
func (s *Server) stop() {
	s.cancel()
	s.ops.close()
	s.jars.close()
	s.flames.close()
}

// ---------------------------------------------------------------------------
// Routing

// route serves one path for the methods in byMethod; other methods get 405.
type route map[string]http.HandlerFunc

func (rt route) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h, ok := rt[r.Method]; ok {
		h(w, r)
		return
	}
	if r.Method == http.MethodHead {
		if h, ok := rt[http.MethodGet]; ok {
			h(w, r)
			return
		}
	}
	allowed := make([]string, 0, len(rt))
	for m := range rt {
		allowed = append(allowed, m)
	}
	sort.Strings(allowed)
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed for %s; use %s", r.Method, r.URL.Path, strings.Join(allowed, " or ")))
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	for path, rt := range map[string]route{
		"/config":                        {http.MethodGet: s.getConfig},
		"/cluster":                       {http.MethodDelete: s.deleteCluster},
		"/overview":                      {http.MethodGet: s.getOverview},
		"/jobmanager/config":             {http.MethodGet: s.getClusterConfig},
		"/taskmanagers":                  {http.MethodGet: s.getTaskManagers},
		"/metrics":                       {http.MethodGet: metricsHandler(s.backend, s.cfg.BackendTimeout, func() context.Context { return s.ctx }, s.log).ServeHTTP},
		"/jobs":                          {http.MethodGet: s.getJobs, http.MethodPost: s.postJob},
		"/jobs/overview":                 {http.MethodGet: s.getJobsOverview},
		"/jobs/{jobid}":                  {http.MethodGet: s.getJob, http.MethodPatch: s.patchJob},
		"/jobs/{jobid}/plan":             {http.MethodGet: s.getJobPlan},
		"/jobs/{jobid}/exceptions":       {http.MethodGet: s.getJobExceptions},
		"/jobs/{jobid}/execution-result": {http.MethodGet: s.getJobResult},
		"/jobs/{jobid}/checkpoints":      {http.MethodGet: s.getJobCheckpoints, http.MethodPost: s.postCheckpoint},
		"/jobs/{jobid}/checkpoints/details/{checkpointid}":                  {http.MethodGet: s.getCheckpointDetails},
		"/jobs/{jobid}/checkpoints/config":                                  {http.MethodGet: s.getCheckpointConfig},
		"/jobs/{jobid}/checkpoints/{triggerid}":                             {http.MethodGet: s.getCheckpointStatus},
		"/jobs/{jobid}/savepoints":                                          {http.MethodPost: s.postSavepoint},
		"/jobs/{jobid}/savepoints/{triggerid}":                              {http.MethodGet: s.getSavepointStatus},
		"/jobs/{jobid}/stop":                                                {http.MethodPost: s.postStop},
		"/jobs/{jobid}/yarn-cancel":                                         {http.MethodGet: s.getYarnCancel},
		"/jobs/{jobid}/config":                                              {http.MethodGet: s.getJobConfig},
		"/jobs/{jobid}/jobmanager/config":                                   {http.MethodGet: s.getJobJobManagerConfig},
		"/jobs/{jobid}/vertices/{vertexid}":                                 {http.MethodGet: s.getVertex},
		"/jobs/{jobid}/vertices/{vertexid}/subtasks/metrics":                {http.MethodGet: s.getSubtaskMetrics},
		"/jobs/{jobid}/vertices/{vertexid}/metrics":                         {http.MethodGet: s.getVertexMetrics},
		"/jobs/{jobid}/vertices/{vertexid}/subtasks/{subtaskindex}/metrics": {http.MethodGet: s.getSubtaskIndexMetrics},
		"/jobs/{jobid}/metrics":                                             {http.MethodGet: s.getJobMetrics},
		"/jobs/metrics":                                                     {http.MethodGet: s.getJobsMetrics},
		"/jobmanager/metrics":                                               {http.MethodGet: s.getJobManagerMetrics},
		"/jobs/{jobid}/vertices/{vertexid}/watermarks":                      {http.MethodGet: s.getVertexWatermarks},
		"/jobs/{jobid}/vertices/{vertexid}/flamegraph":                      {http.MethodGet: s.getVertexFlameGraph},
		"/taskmanagers/{taskmanagerid}":                                     {http.MethodGet: s.getTaskManager},
		"/savepoint-disposal":                                               {http.MethodPost: s.postSavepointDisposal},
		"/jars":                                                             {http.MethodGet: s.getJars},
		"/jars/upload":                                                      {http.MethodPost: s.postJarUpload},
		"/jars/{jarid}":                                                     {http.MethodDelete: s.deleteJar},
		"/jars/{jarid}/plan":                                                {http.MethodGet: s.jarPlan, http.MethodPost: s.jarPlan},
		"/jars/{jarid}/run":                                                 {http.MethodPost: s.postJarRun},
		"/jobmanager/thread-dump":                                           {http.MethodGet: s.getJobManagerThreadDump},
		"/jobmanager/environment":                                           {http.MethodGet: s.getJobManagerEnvironment},
		"/jobmanager/yarn":                                                  {http.MethodGet: s.getYARNApplication},
		"/jobmanager/logs":                                                  {http.MethodGet: s.getJobManagerLogs},
		"/jobmanager/logs/{filename}":                                       {http.MethodGet: s.getJobManagerLogFile},
		"/jobmanager/log":                                                   {http.MethodGet: s.getJobManagerLog},
		"/jobmanager/stdout":                                                {http.MethodGet: s.getJobManagerStdout},
		"/applications/overview":                                            {http.MethodGet: s.getApplicationsOverview},
		"/jobs/{jobid}/vertices/{vertexid}/backpressure":                    {http.MethodGet: s.getVertexBackPressure},
		"/jobs/{jobid}/vertices/{vertexid}/subtasktimes":                    {http.MethodGet: s.getSubtaskTimes},
		"/jobs/{jobid}/vertices/{vertexid}/taskmanagers":                    {http.MethodGet: s.getVertexTaskManagers},
		"/jobs/{jobid}/vertices/{vertexid}/accumulators":                    {http.MethodGet: s.getVertexAccumulators},
		"/jobs/{jobid}/vertices/{vertexid}/subtasks/accumulators":           {http.MethodGet: s.getSubtasksAccumulators},
		"/jobs/{jobid}/accumulators":                                        {http.MethodGet: s.getJobAccumulators},
		"/savepoint-disposal/{triggerid}":                                   {http.MethodGet: s.getSavepointDisposalStatus},
		"/taskmanagers/{taskmanagerid}/logs":                                {http.MethodGet: s.getTaskManagerLogs},
		"/taskmanagers/{taskmanagerid}/logs/{filename}":                     {http.MethodGet: s.getTaskManagerLogFile},
		"/taskmanagers/{taskmanagerid}/log":                                 {http.MethodGet: s.getTaskManagerLog},
		"/taskmanagers/{taskmanagerid}/stdout":                              {http.MethodGet: s.getTaskManagerStdout},
		"/taskmanagers/{taskmanagerid}/thread-dump":                         {http.MethodGet: s.getTaskManagerThreadDump},
		"/taskmanagers/{taskmanagerid}/metrics":                             {http.MethodGet: s.getTaskManagerMetrics},
		"/taskmanagers/metrics":                                             {http.MethodGet: s.getTaskManagersMetrics},
	} {
		mux.Handle(path, rt)
	}
	s.dashboardRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "Not found: "+r.URL.Path)
	})
	return s.recoverer(versioned(s.authenticated(mux)))
}

// versioned serves /v1/... as /... (Flink's versioned URLs).
func versioned(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/v1/"); ok {
			r2 := new(http.Request)
			*r2 = *r
			u := *r.URL
			u.Path = "/" + rest
			u.RawPath = ""
			r2.URL = &u
			r = r2
		}
		next.ServeHTTP(w, r)
	})
}

// recoverer turns a panic in a handler into a logged 500.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic serving REST request", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			if !tw.wrote {
				writeError(tw, http.StatusInternalServerError, "Internal server error.", fmt.Sprintf("panic: %v", v))
			}
		}()
		next.ServeHTTP(tw, r)
	})
}

type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *trackingWriter) WriteHeader(code int) {
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *trackingWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *trackingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ---------------------------------------------------------------------------
// Answers

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)              // "a -> b", as Flink writes it
	if err := enc.Encode(v); err != nil { // our own types: cannot happen short of a NaN in a float
		writeError(w, http.StatusInternalServerError, "Internal server error.", "encoding the answer: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

func writeError(w http.ResponseWriter, status int, msgs ...string) {
	b, _ := json.Marshal(restapi.ErrorResponse{Errors: msgs})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b)
}

// statusOf maps a Backend error to an HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, restapi.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, restapi.ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, restapi.ErrConflict):
		return http.StatusConflict
	case errors.Is(err, restapi.ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	default:
		return http.StatusInternalServerError
	}
}

// writeBackendError answers a failed Backend call.
func (s *Server) writeBackendError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	if status >= 500 {
		s.log.Warn("REST request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		if status == http.StatusInternalServerError {
			writeError(w, status, "Internal server error.", err.Error())
			return
		}
	}
	writeError(w, status, err.Error())
}
