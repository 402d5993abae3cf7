# The Docker engine for docket's container scripts (scripts/testcontainers-suite.sh,
# docker/fresh/run.sh), in one place. Sourced, not run: it defines functions only.
#
#   docket_engine_start STATE [DOCKERD ARGS...]
#       uses the engine at $DOCKER_HOST (or the default socket) when it answers, else the
#       dockerd a previous run left at STATE/docker.sock, else starts dockerd there with the
#       given extra arguments (and exports DOCKER_HOST). Prints one line saying which; fails
#       with dockerd's log when it does not come up within 60 s.
#   docket_engine_stop
#       stops the dockerd docket_engine_start started, if any (call it from an EXIT trap).

docket_engine_ok() { timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
docket_dockerd_pid=""

docket_engine_start() {
  local state=$1
  shift
  if docket_engine_ok; then
    echo "engine: the Docker engine at ${DOCKER_HOST:-the default socket}"
    return 0
  fi
  export DOCKER_HOST="unix://$state/docker.sock"
  if docket_engine_ok; then
    echo "engine: the dockerd left running at $DOCKER_HOST"
    return 0
  fi
  mkdir -p "$state"
  dockerd --host "$DOCKER_HOST" --data-root "$state/data" --exec-root "$state/exec" \
    --pidfile "$state/dockerd.pid" --iptables=false --ip-masq=false "$@" \
    >"$state/dockerd.log" 2>&1 &
  docket_dockerd_pid=$!
  for _ in $(seq 60); do
    docket_engine_ok && break
    kill -0 "$docket_dockerd_pid" 2>/dev/null || break
    sleep 1
  done
  if ! docket_engine_ok; then
    echo "dockerd did not come up within 60 s; its log ($state/dockerd.log):" >&2
    tail -n 30 "$state/dockerd.log" >&2
    return 1
  fi
  echo "engine: started dockerd at $DOCKER_HOST"
}

docket_engine_stop() {
  [ -n "$docket_dockerd_pid" ] || return 0
  kill -TERM "$docket_dockerd_pid" 2>/dev/null || true
  for _ in $(seq 30); do
    kill -0 "$docket_dockerd_pid" 2>/dev/null || break
    sleep 1
  done
  kill -KILL "$docket_dockerd_pid" 2>/dev/null || true
}
