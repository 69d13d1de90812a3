#!/usr/bin/env python3
"""The reconciliation worker of the fencing-token article, against a table fenced by fencewatch.

It computes each region's total from `accounts` and writes it to `region_totals` (see
schema.sql in this folder), in one transaction, every row carrying the worker's generation. The
fence's trigger on `region_totals` applies a row only while no newer generation owns the table:
a worker that paused after reading while another took over and wrote writes nothing, and says
so, however long it was paused.

Needs Python 3.9+ and psycopg 3 (pip install "psycopg[binary]"); the daemon is called with the
standard library. Set up a PostgreSQL database (here the daemon keeps its store in it too, so
that the fence can check the lease):

    export DATABASE_URL=postgres://USER@HOST/shop
    psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f assets/examples/schema.sql
    fencewatch serve --database "$DATABASE_URL" 2>fencewatch.log & sleep 2   # the lease authority
    fencewatch fence install --database "$DATABASE_URL"
    fencewatch fence protect --database "$DATABASE_URL" region_totals --token-column fence_token \
        --scope totals --owner-column worker --lease reconcile

Run it:

    python3 assets/examples/reconcile.py                  # takes a generation of lease reconcile
    python3 assets/examples/reconcile.py --token 8        # a generation from your own authority

See the fence stop a paused worker, in an interactive shell:

    python3 assets/examples/reconcile.py --ttl 2 --pause-after-read   # reads, then stops itself
    psql "$DATABASE_URL" -c "UPDATE accounts SET balance_cents = 0 WHERE id = 1"  # inputs change
    python3 assets/examples/reconcile.py       # waits for the lease to lapse, writes: exit 0
    fg                                         # the first wakes: its write affects 0 rows, exit 3

Options: --database URL (default $DATABASE_URL), --url URL of the daemon (default
$FENCEWATCH_URL or http://127.0.0.1:7420; FENCEWATCH_API_KEY and FENCEWATCH_CA_CERT are read
as by fencewatch), --lease NAME (reconcile), --holder NAME (host-pid), --ttl SECONDS (30),
--token N, --pause-after-read.

Exit codes:
    0  the totals were written
    1  the database or the daemon failed (unreachable, an error, the schema missing)
    2  bad command line
    3  fenced: a newer generation owns the totals; nothing of this run was written
"""

import argparse
import json
import os
import signal
import socket
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

EXIT_WRITTEN = 0
EXIT_FAILED = 1
EXIT_FENCED = 3

try:
    import psycopg
except ImportError:
    print('reconcile.py needs psycopg 3: pip install "psycopg[binary]"', file=sys.stderr)
    sys.exit(EXIT_FAILED)


class Failed(Exception):
    """The database or the daemon failed: exit 1."""


class Fenced(Exception):
    """The fence refused this worker's generation: exit 3."""


def call_daemon(args, path, body):
    """POSTs `body` as JSON to the daemon; returns (status, the JSON answer or {})."""
    request = urllib.request.Request(
        args.url.rstrip("/") + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    key = os.environ.get("FENCEWATCH_API_KEY")
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        context = ssl.create_default_context(cafile=os.environ.get("FENCEWATCH_CA_CERT"))
        with urllib.request.urlopen(request, timeout=10, context=context) as answer:
            status, text = answer.status, answer.read()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read()
    except OSError as error:  # URLError, refused, timed out, an unreadable CA file
        raise Failed(f"the fencewatch daemon at {args.url} did not answer: {error}") from error
    try:
        document = json.loads(text) if text else {}
    except ValueError:
        document = text.decode(errors="replace")
    return status, document if isinstance(document, dict) else {"detail": document}


def acquire(args):
    """A new generation of the lease; waits while another holder has it."""
    path = f"/v1/leases/{urllib.parse.quote(args.lease, safe='')}/acquire"
    waiting = False
    while True:
        status, answer = call_daemon(
            args, path, {"holder": args.holder, "ttl_ms": int(args.ttl * 1000)}
        )
        if status == 200 and isinstance(answer.get("token"), int):
            return answer["token"]
        if status == 409 and answer.get("type") == "lease-held":
            if not waiting:
                print(f"lease {args.lease} is held by {answer.get('holder')} until "
                      f"{answer.get('expires_at')}: waiting", flush=True)
                waiting = True
            time.sleep(0.5)
            continue
        raise Failed(f"acquiring lease {args.lease}: {status} {answer.get('detail', answer)}")


def release(args, token):
    """Best effort: a lease superseded meanwhile answers 409, and the TTL ends it anyway."""
    path = f"/v1/leases/{urllib.parse.quote(args.lease, safe='')}/release"
    try:
        call_daemon(args, path, {"holder": args.holder, "token": token})
    except Failed:
        pass


def pause():
    """Stops this process as a GC pause or a stalled host would; SIGCONT (fg) resumes it."""
    print(f"pausing: resume with fg or kill -CONT {os.getpid()}", flush=True)
    os.kill(os.getpid(), signal.SIGSTOP)


def reconcile(args, token):
    """Reads the inputs and writes every region's total in one transaction, fenced by `token`."""
    with psycopg.connect(args.database) as conn:
        totals = conn.execute(
            "SELECT region, sum(balance_cents)::bigint, count(*) FROM accounts"
            " GROUP BY region ORDER BY region"
        ).fetchall()
        print(f"generation {token}: read {sum(n for _, _, n in totals)} accounts", flush=True)
        if args.pause_after_read:
            pause()
        for region, total, count in totals:
            written = conn.execute(
                "UPDATE region_totals SET total_cents = %s, accounts = %s, fence_token = %s,"
                " worker = %s, computed_at = now() WHERE region = %s",
                (total, count, token, args.holder, region),
            ).rowcount
            if written == 1:
                print(f"{region}: {total} cents over {count} accounts", flush=True)
                continue
            # No error: a protected table answers a refused write with zero rows.
            row = conn.execute(
                "SELECT fence_token, worker FROM region_totals WHERE region = %s", (region,)
            ).fetchone()
            if row is None:
                raise Failed(f"region_totals has no row for region {region}: insert one")
            # Commit, not roll back: the refusal's audit row is part of this transaction. The
            # fence refuses a stale generation's first write to the scope, so nothing else of
            # this run was written.
            conn.commit()
            raise Fenced(
                f"fenced: the update of region {region} with generation {token} affected 0 rows"
                f" (the row holds generation {row[0]} of {row[1]}); a newer generation owns"
                f" lease {args.lease}: nothing written, stopping"
            )


def parse_args():
    parser = argparse.ArgumentParser(
        description="A reconciliation worker writing to a table fenced by fencewatch."
    )
    parser.add_argument("--database", default=os.environ.get("DATABASE_URL"))
    parser.add_argument(
        "--url", default=os.environ.get("FENCEWATCH_URL", "http://127.0.0.1:7420")
    )
    parser.add_argument("--lease", default="reconcile")
    parser.add_argument("--holder", default=f"{socket.gethostname()}-{os.getpid()}")
    parser.add_argument("--ttl", type=float, default=30.0, help="the lease's, in seconds")
    parser.add_argument("--token", type=int, help="a generation to use instead of the lease's")
    parser.add_argument("--pause-after-read", action="store_true")
    args = parser.parse_args()
    if not args.database:
        parser.error("--database URL or DATABASE_URL is required")
    if not 0.001 <= args.ttl <= 86400:
        parser.error("--ttl is 0.001 to 86400 seconds")
    if args.token is not None and args.token < 1:
        parser.error("--token is a positive generation")
    return args


def main():
    args = parse_args()
    try:
        token = args.token if args.token is not None else acquire(args)
        try:
            reconcile(args, token)
        finally:
            if args.token is None:
                release(args, token)
    except Fenced as fenced:
        print(fenced, file=sys.stderr)
        return EXIT_FENCED
    except Failed as failed:
        print(f"error: {failed}", file=sys.stderr)
        return EXIT_FAILED
    except psycopg.Error as error:
        print(f"error: the database failed ({error.sqlstate}): {error}", file=sys.stderr)
        return EXIT_FAILED
    print(f"generation {token}: totals written", flush=True)
    return EXIT_WRITTEN


if __name__ == "__main__":
    sys.exit(main())
