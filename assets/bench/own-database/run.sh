#!/usr/bin/env bash
# The cost of the fence on a protected table: the same one-row UPDATE transaction against a
# plain table and a protected one, run by pgbench alternately (plain, protected, then protected,
# plain, ...) at each client count, ROUNDS times, in one invocation. Prints one markdown table
# row per pair: transactions a second, the protected write's time over the plain one's, and the
# WAL each wrote per transaction (pg_current_wal_lsn before and after: the whole server's WAL,
# so run it on a server nothing else writes to).
#
#   assets/bench/own-database/run.sh postgres://postgres@127.0.0.1:5432/fwbench
#
# Needs psql and pgbench on the PATH, and the fencewatch binary (FENCEWATCH, default
# `fencewatch`). Installs the fence in the database (schema fencewatch) if it is not there,
# creates the tables bench_plain and bench_fenced anew (setup.sql) and protects bench_fenced.
# Settings, from the environment: DURATION seconds a pgbench run (10), ROUNDS (3), CLIENTS
# ("1 32"), JOBS pgbench threads at most (2); SYNCHRONOUS_COMMIT=off runs both scripts with
# `SET LOCAL synchronous_commit = off` in their transactions (commits not waiting for the WAL
# flush). Changes no server setting; a CHECKPOINT before each run (skipped without the
# privilege) starts every run with the same full-page writes.
set -euo pipefail

url=${1:?usage: run.sh postgres://USER@HOST/DATABASE}
here=$(cd "$(dirname "$0")" && pwd)
fencewatch=${FENCEWATCH:-fencewatch}
duration=${DURATION:-10}
rounds=${ROUNDS:-3}
clients=${CLIENTS:-1 32}
jobs=${JOBS:-2}

sql() { psql "$url" -X -q -At -v ON_ERROR_STOP=1 "$@"; }

scripts=$here
if [ "${SYNCHRONOUS_COMMIT:-on}" = off ]; then
    scripts=$(mktemp -d)
    trap 'rm -rf "$scripts"' EXIT
    for script in plain protected; do
        sed 's/^BEGIN;$/BEGIN;\nSET LOCAL synchronous_commit = off;/' "$here/$script.sql" \
            > "$scripts/$script.sql"
    done
fi

# A table protected by an earlier run is unprotected before setup.sql drops it.
"$fencewatch" fence install --database "$url" >/dev/null
"$fencewatch" fence unprotect --database "$url" bench_fenced >/dev/null 2>&1 || true
sql -f "$here/setup.sql"
"$fencewatch" fence protect --database "$url" bench_fenced \
    --token-column fence_token --scope-column id >/dev/null

# One statement over all 1,000 rows of each table: the fence's cost per row, without round
# trips or commits. It also creates the 1,000 scopes before the timed runs.
statement_ms() {
    sql -c '\timing on' -c "UPDATE $1 SET total = total + 1, fence_token = fence_token" \
        | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
}
plain_ms=$(statement_ms bench_plain)
fenced_ms=$(statement_ms bench_fenced)
echo "one UPDATE of all 1,000 rows: plain ${plain_ms} ms, protected ${fenced_ms} ms" \
     "($(awk -v a="$plain_ms" -v b="$fenced_ms" 'BEGIN { printf "%.0f", (b - a) }') µs a row more)"
echo

# One pgbench run of script $1 with $2 clients: "tps wal_bytes_per_transaction".
run() {
    local script=$1 n=$2 threads before after out tps count
    threads=$(( n < jobs ? n : jobs ))
    sql -c 'CHECKPOINT' >/dev/null 2>&1 || true
    before=$(sql -c 'SELECT pg_current_wal_lsn()')
    out=$(pgbench -n -c "$n" -j "$threads" -T "$duration" -f "$scripts/$script.sql" "$url" 2>&1) || {
        echo "$out" >&2
        return 1
    }
    after=$(sql -c 'SELECT pg_current_wal_lsn()')
    tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -n 1)
    count=$(echo "$out" | sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p')
    if [ -z "$tps" ] || [ -z "$count" ] || [ "$count" -eq 0 ]; then
        echo "pgbench reported no transactions:" >&2
        echo "$out" >&2
        return 1
    fi
    echo "$tps $(sql -c "SELECT round(pg_wal_lsn_diff('$after', '$before') / $count)")"
}

echo "| round | clients | plain tx/s | protected tx/s | protected / plain time a write | plain WAL B/tx | protected WAL B/tx |"
echo "|---|---|---|---|---|---|---|"
for round in $(seq 1 "$rounds"); do
    for n in $clients; do
        # Alternate which goes first, so that a drift in the machine's speed favours neither.
        if [ $(( round % 2 )) -eq 1 ]; then
            read -r plain_tps plain_wal <<<"$(run plain "$n")"
            read -r fenced_tps fenced_wal <<<"$(run protected "$n")"
        else
            read -r fenced_tps fenced_wal <<<"$(run protected "$n")"
            read -r plain_tps plain_wal <<<"$(run plain "$n")"
        fi
        ratio=$(awk -v p="$plain_tps" -v f="$fenced_tps" 'BEGIN { printf "%.2f", p / f }')
        printf '| %s | %s | %.0f | %.0f | %s | %s | %s |\n' "$round" "$n" "$plain_tps" \
            "$fenced_tps" "$ratio" "$plain_wal" "$fenced_wal"
    done
done
