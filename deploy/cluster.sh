#!/usr/bin/env bash
# Starts N Latchkey replicas (default 3) behind haproxy on this machine's PostgreSQL and Redis,
# in the foreground; Ctrl-C stops everything it started (docs/scaling.md).
#
#   deploy/cluster.sh [-n 3] [-p 8080] [--database-url postgres://…] [--redis-url redis://…] [-- extra server flags]
#
# The replicas listen on 127.0.0.1:<port+1>…<port+N> and haproxy on <port>, with GET /readyz health checks
# (a replica whose database or Redis is unreachable, or that is draining, leaves the rotation).
# Every replica gets the same --url (haproxy's), token secret, --client-id and --allowed-origins, as a
# deployment must (docs/scaling.md, "What every replica must share"). Needs haproxy (Debian: apt-get install haproxy).
set -euo pipefail
cd "$(dirname "$0")/.."

N=3
PORT=8080
DATABASE_URL=postgres://postgres@127.0.0.1:5432/latchkey
REDIS_URL=redis://127.0.0.1:6379
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    -n) N="$2"; shift 2 ;;
    -p) PORT="$2"; shift 2 ;;
    --database-url) DATABASE_URL="$2"; shift 2 ;;
    --redis-url) REDIS_URL="$2"; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
# Node 24 (the project's pinned devDependency when installed) runs the TypeScript sources directly.
NODE=${NODE:-$([ -x node_modules/.bin/node ] && echo node_modules/.bin/node || echo node)}
command -v haproxy >/dev/null || { echo "haproxy is not installed (apt-get install -y haproxy)" >&2; exit 1; }

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

PUBLIC="http://127.0.0.1:${PORT}"
SECRETS="$WORK/secrets"
# One set of secrets for the whole cluster, generated for this run.
ADMIN_SECRET=$("$NODE" -e "console.log(require('crypto').randomBytes(18).toString('base64url'))")
JWT_SECRET=$("$NODE" -e "console.log(require('crypto').randomBytes(32).toString('base64url'))")
CLIENT_SECRET=$("$NODE" -e "console.log(require('crypto').randomBytes(18).toString('base64url'))")
printf 'admin secret: %s\n' "$ADMIN_SECRET" > "$SECRETS"

BACKENDS=""
for i in $(seq 1 "$N"); do
  P=$((PORT + i))
  "$NODE" bin/latchkey.js serve \
    --database-type=postgres --database-url="$DATABASE_URL" --redis-url="$REDIS_URL" \
    --admin-secret="$ADMIN_SECRET" --client-id=latchkey-cluster --client-secret="$CLIENT_SECRET" \
    --jwt-type=HS256 --jwt-secret="$JWT_SECRET" \
    --url="$PUBLIC" --allowed-origins="$PUBLIC" \
    --host=127.0.0.1 --http-port="$P" --grpc-port=0 --metrics-port=0 \
    "${EXTRA[@]}" > "$WORK/replica-$i.log" 2>&1 &
  PIDS+=($!)
  BACKENDS+="    server replica$i 127.0.0.1:$P check inter 1s fall 2 rise 2"$'\n'
done

cat > "$WORK/haproxy.cfg" <<CFG
global
    maxconn 4096
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    option forwardfor
    # A connection refused by a replica that just died is retried on another one (safe: nothing was sent).
    retries 2
    retry-on conn-failure
    option redispatch
frontend latchkey
    bind 127.0.0.1:${PORT}
    default_backend replicas
backend replicas
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
${BACKENDS}
CFG

for i in $(seq 1 "$N"); do
  P=$((PORT + i))
  for _ in $(seq 1 300); do
    curl -fsS "http://127.0.0.1:$P/readyz" >/dev/null 2>&1 && break
    kill -0 "${PIDS[$((i - 1))]}" 2>/dev/null || { echo "replica $i exited; its log:" >&2; cat "$WORK/replica-$i.log" >&2; exit 1; }
    sleep 0.1
  done
done

haproxy -f "$WORK/haproxy.cfg" -db &
HAPROXY=$!
PIDS+=("$HAPROXY")
echo "latchkey: $N replicas behind haproxy at $PUBLIC (logs in $WORK; $(cat "$SECRETS"))"
# A replica that dies leaves the rotation (health checks); the cluster runs until haproxy stops or Ctrl-C.
wait "$HAPROXY"
