// Package rest is the REST endpoint of a Sluice JobManager: Apache Flink's
// REST API (paths, methods, JSON shapes and status codes), so that Flink
// users' tools and habits work, and Prometheus metrics.
//
// The JobManager's Dispatcher implements Backend; New serves it on
// rest.bind-address:rest.port (ConfigFrom reads the settings). Package
// restclient is the matching client.
//
// # Endpoints
//
// Every path is also served under Flink's version prefix, /v1/....
//
//	GET   /config                                    web UI configuration: version, time zone, features
//	GET   /overview                                  TaskManagers, slots, jobs per state
//	GET   /jobmanager/config                         cluster configuration [{key, value}], secrets masked
//	GET   /taskmanagers                              registered TaskManagers
//	GET   /metrics                                   Prometheus metrics (see below)
//	GET   /jobs                                      {"jobs": [{id, status}]}
//	POST  /jobs                                      submit a job (multipart; see SubmitRequest) → 202 {"jobUrl"}
//	GET   /jobs/overview                             {"jobs": [JobOverview]}
//	GET   /jobs/:jobid                               JobDetails: vertices, status, timestamps, plan
//	PATCH /jobs/:jobid?mode=cancel                   cancel → 202
//	GET   /jobs/:jobid/yarn-cancel                   cancel → 202 (Flink 1.x's, for YARN's web proxy, which forwards GET only)
//	GET   /jobs/:jobid/plan                          {"plan": JobPlan}
//	GET   /jobs/:jobid/exceptions[?maxExceptions=N]  failure history
//	GET   /jobs/:jobid/execution-result              {"status": {"id": IN_PROGRESS|COMPLETED}, "job-execution-result"}
//	GET   /jobs/:jobid/checkpoints                   checkpoint counts, summary, latest, history
//	GET   /jobs/:jobid/checkpoints/details/:id       one checkpoint of the history
//	POST  /jobs/:jobid/checkpoints                   {"checkpointType": CONFIGURED|FULL} → 202 {"request-id"}
//	GET   /jobs/:jobid/checkpoints/:triggerid        {"status", "operation": {"checkpointId"|"failure-cause"}}
//	POST  /jobs/:jobid/savepoints                    {"target-directory", "cancel-job", "formatType": CANONICAL} → 202 {"request-id"}
//	POST  /jobs/:jobid/stop                          {"targetDirectory", "drain", "formatType": CANONICAL} → 202 {"request-id"}
//	GET   /jobs/:jobid/savepoints/:triggerid         savepoint and stop status: {"status", "operation": {"location"|"failure-cause"}}
//	GET   /jobs/:jobid/config                        {"jid", "name", "execution-config"}
//	GET   /jobs/:jobid/jobmanager/config             the job's configuration [{key, value}], secrets masked
//	GET   /jobs/:jobid/vertices/:vertexid            a vertex's subtasks (state, times, I/O) and their aggregate
//	GET   /jobs/:jobid/vertices/:vertexid/subtasks/metrics[?get=&agg=&subtasks=]  [{id, min, max, avg, sum, skew}]
//	GET   /jobs/:jobid/vertices/:vertexid/metrics[?get=]                           [{id: "<subtask>.<metric>", value}]
//	GET   /jobs/:jobid/vertices/:vertexid/watermarks [{id: "<subtask>.currentInputWatermark", value}]
//	GET   /jobs/:jobid/vertices/:vertexid/subtasks/:subtaskindex/metrics[?get=]  [{id, value}] of one subtask
//	GET   /jobs/:jobid/vertices/:vertexid/flamegraph[?type=FULL|ON_CPU|OFF_CPU&subtaskindex=N]  {"endTimestamp", "data": {name, value, children}}
//	                                                 Flink's flame graph from Go's profiler (rest.flamegraph.enabled; see flamegraph.go)
//	GET   /jobs/:jobid/metrics[?get=]                [{id, value}]: numRestarts, checkpoint counts and sizes
//	GET   /jobs/metrics[?get=&agg=&jobs=]            the job metrics aggregated over jobs
//	GET   /jobmanager/metrics[?get=]                 [{id, value}]: TaskManagers, slots, running jobs
//	GET   /taskmanagers/:taskmanagerid               one TaskManager (Flink's TaskManagerDetailsInfo)
//	GET   /taskmanagers/:taskmanagerid/logs[/:name], log, stdout  its log directory, asked of the TaskManager
//	GET   /taskmanagers/:taskmanagerid/thread-dump   its goroutines
//	GET   /taskmanagers/:taskmanagerid/metrics[?get=]  [{id, value}]: its process's Status.JVM.* (Go runtime) metrics
//	GET   /taskmanagers/metrics[?get=&agg=&taskmanagers=]  those aggregated over the TaskManagers
//	GET   /jobs/:jobid/vertices/:vertexid/backpressure   back-pressure levels from backPressuredTimeMsPerSecond
//	GET   /jobs/:jobid/vertices/:vertexid/subtasktimes   when each subtask entered each state
//	GET   /jobs/:jobid/vertices/:vertexid/taskmanagers   the vertex's subtasks by TaskManager
//	GET   /jobs/:jobid/accumulators, .../vertices/:vertexid/accumulators, .../subtasks/accumulators  (empty: no user accumulators)
//	GET   /jobmanager/thread-dump                    the JobManager's goroutines
//	GET   /jobmanager/environment                    its Go runtime and arguments
//	GET   /jobmanager/logs[/:name], /jobmanager/log, /jobmanager/stdout  its log directory (env.log.dir)
//	GET   /applications/overview                     {"applications": []}: Sluice has no applications
//	POST  /savepoint-disposal                        {"savepoint-path"} → 202 {"request-id"}: delete a savepoint
//	GET   /savepoint-disposal/:triggerid             {"status", "operation": {} | {"failure-cause"}}
//	GET   /                                          the web dashboard (its files under /web/)
//
// The task metrics of a subtask (vertex, subtask and subtasks/metrics) are
// Flink's: numRecordsIn/Out, numBytesIn/Out, accumulated{Busy,
// Backpressured,Idle}Time, currentInputWatermark, currentOutputWatermark,
// and, once the JobMaster has sampled the subtask's counters twice (its
// worker reports each second), numRecordsIn/OutPerSecond and
// numBytesIn/OutPerSecond over the last minute and busyTimeMsPerSecond,
// backPressuredTimeMsPerSecond and idleTimeMsPerSecond over the last 5 s.
// Aggregations (?agg=) are Flink's min, max, avg, sum and skew.
//
// Job and trigger IDs are 32 hexadecimal characters (read in either case,
// written in lower case). Errors are
// answered as Flink answers them, {"errors": ["..."]}: 400 for a malformed
// ID, parameter or body (JSON bodies are decoded strictly: an unknown
// member is an error naming it), 404 for an unknown path, job or trigger,
// 405 (with Allow) for a method a path does not serve, 409 for an operation
// the job's state does not allow, 413 for a body over
// rest.server.max-content-length, 500 for a failure of the server, which is
// logged; a panic in a handler is recovered, logged and answered 500.
//
// Savepoints, stop-with-savepoint and checkpoints are asynchronous: the
// POST answers a trigger ID at once and the server runs the Backend's
// blocking call on a goroutine it owns; GET .../:triggerid answers
// IN_PROGRESS until it completes, then its outcome for
// rest.async.store-duration. A request carrying a "triggerId" already in use
// for the job is answered with that operation rather than starting another,
// so clients may retry a trigger safely.
//
// # Dashboard
//
// GET / serves Sluice's web dashboard, embedded in the binary (package
// directory dashboard/: HTML, CSS and JavaScript, no build step). It reads
// this API with URLs relative to the page, so it works wherever the
// endpoint is mounted, e.g. behind YARN's web proxy at /proxy/<app>/.
//
// # Metrics
//
// GET /metrics serves the cluster's metrics in the Prometheus text format,
// from a registry of the server's own (never the global one) whose
// collector asks the Backend at each scrape. Metric names and labels are
// those of Flink's Prometheus reporter, and Sluice's own (sluice_*: the
// Kerberos logins of the cluster's processes and the delegation tokens)
// have no Flink counterpart; see the list at the metric declarations in
// metrics.go.
package rest
