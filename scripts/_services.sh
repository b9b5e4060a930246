# shellcheck shell=bash
# Helpers for scripts/test (and any other script that needs PostgreSQL and
# Redis): find a server the developer already has, or start a private,
# throwaway one, and stop whatever was started on exit.
#
# Source it, don't run it. The caller must set PY to a Python that has
# psycopg installed (the project's .venv), and must call svc_cleanup on exit:
#
#     PY=.venv/bin/python
#     . scripts/_services.sh
#     trap svc_cleanup EXIT
#
# Results are left in global variables (not printed) because the private
# servers must be started by this shell itself, not in a $(...) subshell,
# for the cleanup to know their pids:
#     find_or_start_postgres  -> SVC_PG_URL     (empty if none could be had)
#     find_or_start_redis     -> SVC_REDIS_URL  (empty if none could be had)

# One database per run (the shell's pid in its name), dropped on exit: two
# runs on one machine (two checkouts, a CI run beside a developer's) must not
# empty each other's tables.
SVC_DB_NAME=authsvc_test_$$
SVC_DB_SHARED=    # "host port" of a server not ours, where SVC_DB_NAME was created
SVC_PG_URL=
SVC_REDIS_URL=

SVC_TMP=          # temp dir holding the private servers' data and logs
SVC_PG_DATA=      # data dir of the private PostgreSQL cluster, if started
SVC_PG_BIN=       # its initdb / pg_ctl directory
SVC_PG_PORT=      # its port
SVC_REDIS_PID=    # pid of the private redis-server, if started

# Progress on stdout (keeps its place among pytest's output in a CI log),
# problems on stderr.
say()  { printf '%s\n' "test: $*"; }
warn() { printf '%s\n' "test: WARNING: $*" >&2; }
err()  { printf '%s\n' "test: $*" >&2; }

# ---------------------------------------------------------------- plumbing

svc_tmpdir() {
	if [ -z "$SVC_TMP" ]; then
		SVC_TMP=$(mktemp -d "${TMPDIR:-/tmp}/authsvc-test.XXXXXX")
		# The postgres user (when we run as root) must be able to reach
		# its data dir inside; nobody needs to list it.
		chmod 711 "$SVC_TMP"
	fi
}

# Stop what we started, remove the temp dir. Safe to call more than once.
svc_cleanup() {
	if [ -n "$SVC_DB_SHARED" ]; then
		# shellcheck disable=SC2086 # "host port", split on purpose
		pg_admin $SVC_DB_SHARED "DROP DATABASE IF EXISTS \"$SVC_DB_NAME\" WITH (FORCE)" 2>/dev/null || true
		SVC_DB_SHARED=
	fi
	if [ -n "$SVC_REDIS_PID" ]; then
		kill "$SVC_REDIS_PID" 2>/dev/null || true
		wait "$SVC_REDIS_PID" 2>/dev/null || true
		SVC_REDIS_PID=
	fi
	if [ -n "$SVC_PG_DATA" ]; then
		# Throwaway cluster: immediate shutdown, nothing to preserve.
		as_pg_owner "$SVC_PG_BIN/pg_ctl" -D "$SVC_PG_DATA" -m immediate -w stop \
			>/dev/null 2>&1 || true
		SVC_PG_DATA=
	fi
	if [ -n "$SVC_TMP" ]; then
		rm -rf "$SVC_TMP"
		SVC_TMP=
	fi
}

free_port() {
	"$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Hide the password of a URL before printing it.
redact_url() {
	printf '%s\n' "$1" | sed -E 's#(://[^:/@]*):[^@/]*@#\1:***@#'
}

# ---------------------------------------------------------------- PostgreSQL

# A PostgreSQL client tool that actually runs: Debian's /usr/bin/psql and
# pg_isready are wrappers that fail when no postgresql-client-N is installed.
have_pg_tool() {
	command -v "$1" >/dev/null 2>&1 && "$1" --version >/dev/null 2>&1
}

# Does a PostgreSQL server answer on host:port?
pg_answers() {
	local host=$1 port=$2
	if have_pg_tool pg_isready; then
		pg_isready -q -t 3 -h "$host" -p "$port" -U postgres
	else
		"$PY" - "postgresql://postgres@$host:$port/postgres" <<-'EOF' >/dev/null 2>&1
			import sys, psycopg
			psycopg.connect(sys.argv[1], connect_timeout=3).close()
		EOF
	fi
}

# Run SQL statements on host:port's postgres database, as user postgres,
# outside a transaction (CREATE/DROP DATABASE need that).
pg_admin() {
	local host=$1 port=$2
	shift 2
	if have_pg_tool psql; then
		# -X: ignore the developer's ~/.psqlrc.
		local args=() statement
		for statement in "$@"; do args+=(-c "$statement"); done
		psql -X -q -v ON_ERROR_STOP=1 -h "$host" -p "$port" -U postgres -d postgres \
			-c "SET client_min_messages = warning" "${args[@]}" >/dev/null
	else
		"$PY" - "postgresql://postgres@$host:$port/postgres" "$@" <<-'EOF'
			import sys, psycopg
			with psycopg.connect(sys.argv[1], autocommit=True, connect_timeout=5) as conn:
			    for statement in sys.argv[2:]:
			        conn.execute(statement)
		EOF
	fi
}

# (Re)create an empty database $SVC_DB_NAME on host:port. WITH (FORCE)
# (PostgreSQL 13+) kicks out sessions a killed earlier run may have left.
pg_recreate_db() {
	local host=$1 port=$2 db=$SVC_DB_NAME
	pg_admin "$host" "$port" "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" "CREATE DATABASE \"$db\""
}

# Directory holding both initdb and pg_ctl: PATH first, then Debian's
# versioned dirs (which are not on PATH), newest version first.
pg_find_bindir() {
	local dir
	if command -v initdb >/dev/null 2>&1; then
		dir=$(dirname "$(command -v initdb)")
		if [ -x "$dir/pg_ctl" ]; then
			printf '%s\n' "$dir"
			return 0
		fi
	fi
	# shellcheck disable=SC2012
	for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
		if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
			printf '%s\n' "$dir"
			return 0
		fi
	done
	return 1
}

# initdb and postgres refuse to run as root: as root, run them as the
# postgres user that Debian's package creates.
as_pg_owner() {
	if [ "$(id -u)" = 0 ]; then
		# cd: the postgres user may not be allowed into the caller's cwd.
		(cd "$SVC_TMP" && runuser -u postgres -- "$@")
	else
		"$@"
	fi
}

# Start a private cluster in the temp dir on a free loopback port; on
# success set SVC_PG_DATA and SVC_PG_PORT. (Not printed for $(...): a
# subshell would lose SVC_PG_DATA, and the cleanup would not stop it.)
pg_start_private() {
	local bindir=$1 dir port
	if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
		warn "running as root and there is no 'postgres' user to run initdb as"
		return 1
	fi
	svc_tmpdir
	dir=$SVC_TMP/pg
	mkdir -p "$dir"
	if [ "$(id -u)" = 0 ]; then
		chown postgres "$dir"
	fi

	if ! as_pg_owner "$bindir/initdb" -D "$dir/data" -U postgres -A trust \
		-E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1; then
		warn "initdb failed:"; cat "$dir/initdb.log" >&2
		return 1
	fi
	# Mark the cluster as ours now, so svc_cleanup stops it whatever happens.
	SVC_PG_BIN=$bindir
	SVC_PG_DATA=$dir/data

	# The free port is only free until someone else takes it: retry a few
	# times. Settings go into postgresql.conf rather than through pg_ctl -o,
	# which would word-split a temp path that holds spaces.
	local try
	for try in 1 2 3; do
		port=$(free_port)
		cat >>"$dir/data/postgresql.conf" <<-EOF
			port = $port
			listen_addresses = '127.0.0.1'
			unix_socket_directories = '$dir'
			# Throwaway test cluster: durability buys nothing here.
			fsync = off
			synchronous_commit = off
			full_page_writes = off
		EOF
		if as_pg_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" \
			-w -t 60 start >/dev/null 2>&1; then
			SVC_PG_PORT=$port
			return 0
		fi
		warn "private PostgreSQL did not start on port $port (attempt $try)"
	done
	warn "giving up; its log:"; tail -n 20 "$dir/server.log" >&2 || true
	return 1
}

# Sets SVC_PG_URL, or leaves it empty when no PostgreSQL can be had.
find_or_start_postgres() {
	local bindir

	# a. The developer's (or CI's) own choice, used as is.
	if [ -n "${AUTHSVC_TEST_DATABASE_URL:-}" ]; then
		SVC_PG_URL=$AUTHSVC_TEST_DATABASE_URL
		say "PostgreSQL: using AUTHSVC_TEST_DATABASE_URL ($(redact_url "$SVC_PG_URL"))"
		return 0
	fi

	# b. A server already running on the standard port (a developer's
	#    machine, CI): a fresh database on it is the cheapest option.
	if pg_answers 127.0.0.1 5432; then
		if pg_recreate_db 127.0.0.1 5432; then
			SVC_DB_SHARED="127.0.0.1 5432"
			SVC_PG_URL=postgresql://postgres@127.0.0.1:5432/$SVC_DB_NAME
			say "PostgreSQL: using the server on 127.0.0.1:5432, fresh database $SVC_DB_NAME"
			return 0
		fi
		warn "PostgreSQL on 127.0.0.1:5432 answers but database $SVC_DB_NAME could not be created there as user postgres; trying a private cluster"
	fi

	# c. Installed but not running: start a private cluster.
	if bindir=$(pg_find_bindir); then
		say "PostgreSQL: starting a private cluster ($bindir)"
		if pg_start_private "$bindir" && pg_recreate_db 127.0.0.1 "$SVC_PG_PORT"; then
			SVC_PG_URL=postgresql://postgres@127.0.0.1:$SVC_PG_PORT/$SVC_DB_NAME
			say "PostgreSQL: private cluster on 127.0.0.1:$SVC_PG_PORT"
			return 0
		fi
		warn "could not start a private PostgreSQL cluster"
	fi

	# d. Nothing: the caller decides whether that is fatal.
	return 1
}

# ---------------------------------------------------------------- Redis

# Does a Redis server answer PING on 127.0.0.1:port?
redis_answers() {
	local port=$1
	if command -v redis-cli >/dev/null 2>&1; then
		[ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]
	else
		"$PY" - "$port" <<-'EOF' >/dev/null 2>&1
			import socket, sys
			with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1) as s:
			    s.sendall(b"PING\r\n")
			    assert s.recv(64).startswith(b"+PONG")
		EOF
	fi
}

redis_find_server() {
	local p
	for p in "$(command -v redis-server 2>/dev/null || true)" /usr/bin/redis-server /usr/sbin/redis-server; do
		if [ -n "$p" ] && [ -x "$p" ]; then
			printf '%s\n' "$p"
			return 0
		fi
	done
	return 1
}

# Start a private, non-persistent redis-server on a free loopback port; on
# success set SVC_REDIS_PID and SVC_REDIS_URL.
redis_start_private() {
	local server=$1 dir port try
	svc_tmpdir
	dir=$SVC_TMP/redis
	mkdir -p "$dir"
	for try in 1 2 3; do
		port=$(free_port)
		# Not --daemonize: as our own child its pid is known and the
		# cleanup can kill it. stdin from /dev/null so it never holds
		# the caller's terminal or CI's pipes.
		"$server" --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
			--daemonize no --dir "$dir" --logfile "$dir/redis.log" \
			</dev/null >>"$dir/redis.out" 2>&1 &
		SVC_REDIS_PID=$!
		for _ in $(seq 1 100); do   # up to ~10 s
			if redis_answers "$port"; then
				SVC_REDIS_URL=redis://127.0.0.1:$port/0
				return 0
			fi
			# Died already (port taken meanwhile, bad option): retry.
			kill -0 "$SVC_REDIS_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill "$SVC_REDIS_PID" 2>/dev/null || true
		wait "$SVC_REDIS_PID" 2>/dev/null || true
		SVC_REDIS_PID=
		warn "private redis-server did not answer on port $port (attempt $try)"
	done
	warn "giving up; its log:"; tail -n 20 "$dir/redis.log" "$dir/redis.out" >&2 2>/dev/null || true
	return 1
}

# Sets SVC_REDIS_URL, or leaves it empty when no Redis can be had.
find_or_start_redis() {
	local server

	# a. The developer's (or CI's) own choice. The tests FLUSH its
	#    database: point it at a database you can lose.
	if [ -n "${AUTHSVC_TEST_REDIS_URL:-}" ]; then
		SVC_REDIS_URL=$AUTHSVC_TEST_REDIS_URL
		say "Redis: using AUTHSVC_TEST_REDIS_URL ($(redact_url "$SVC_REDIS_URL")); its database is flushed by the tests"
		return 0
	fi

	# b. Preferred over a running shared server: a private instance is
	#    isolated, needs no flushing of anyone's data, and costs ~50 ms.
	if server=$(redis_find_server); then
		if redis_start_private "$server"; then
			say "Redis: private redis-server on ${SVC_REDIS_URL#redis://} (pid $SVC_REDIS_PID)"
			return 0
		fi
		warn "could not start a private redis-server ($server)"
	fi

	# c. A shared server on the standard port: use a high database number
	#    that is unlikely to hold anything, and say loudly that it is wiped.
	if redis_answers 6379; then
		SVC_REDIS_URL=redis://127.0.0.1:6379/15
		warn "Redis: no redis-server binary to start a private one; using the shared server on 127.0.0.1:6379 — its DATABASE 15 IS FLUSHED by the tests"
		return 0
	fi

	# d. Nothing: the caller decides whether that is fatal.
	return 1
}
