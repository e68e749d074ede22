# Sourced by the Beam conformance scripts: builds the sluice CLI and starts
# `sluice beam job-server` for them.
#
#   beam_job_server ROOT WORK PORT
#
# builds ROOT's CLI into WORK, starts the job server on PORT (its log in
# WORK/server.log), waits until it listens, and on the script's exit stops
# it and removes WORK. Fails if the server exits before listening.
beam_job_server() {
  local root=$1 work=$2 port=$3
  _beam_work=$work
  _beam_server_pid=
  trap _beam_job_server_cleanup EXIT
  (cd "$root" && go build -o "$work/sluice" ./cmd/client)
  "$work/sluice" beam job-server --port "$port" >"$work/server.log" 2>&1 &
  _beam_server_pid=$!
  for _ in $(seq 100); do
    grep -q "listening on" "$work/server.log" && return 0
    kill -0 "$_beam_server_pid" || { cat "$work/server.log" >&2; return 1; }
    sleep 0.1
  done
  echo "the Beam job server did not listen on :$port within 10 s" >&2
  cat "$work/server.log" >&2
  return 1
}

_beam_job_server_cleanup() {
  if [[ -n "${_beam_server_pid:-}" ]]; then
    kill -INT "$_beam_server_pid" 2>/dev/null || true
    wait "$_beam_server_pid" 2>/dev/null || true
  fi
  rm -rf "$_beam_work"
}
