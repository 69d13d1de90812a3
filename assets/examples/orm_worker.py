#!/usr/bin/env python3
"""An order-fulfilment worker on SQLAlchemy 2's ORM, writing a table fenced by fencewatch.

It loads the orders of a region, sets their status, and commits, the way SQLAlchemy's unit of
work does by default: the UPDATE it sends names only the columns that changed, so it leaves the
token column out. Two session events are the recipe that makes that safe
(docs/own-database.md, "ORMs"):

- after_begin states the worker's generation for the transaction, with
  `SELECT fencewatch.begin(token => …, owner => …)`: every protected write in it is judged with
  that generation, whatever columns the UPDATE names;
- before_commit asks the fence how many of the transaction's writes it refused
  (`SELECT fencewatch.refused()`), so that a refused INSERT, which affects zero rows without an
  error, is not committed as if it had been written. (A refused UPDATE is caught by SQLAlchemy
  itself: it expected one row and matched none, StaleDataError.)

Needs Python 3.9+, SQLAlchemy 2 and psycopg 3 (pip install sqlalchemy "psycopg[binary]"), and
a table like:

    CREATE TABLE orders (id integer PRIMARY KEY, region text NOT NULL, status text NOT NULL,
                         updated_by text, fence_token bigint NOT NULL DEFAULT 1);
    fencewatch fence protect --database "$DATABASE_URL" orders --token-column fence_token \\
        --scope-column region --owner-column updated_by

Run:

    python3 assets/examples/orm_worker.py --token 8 --owner w2 --status shipped

Options: --database URL (default $DATABASE_URL), --region NAME (eu), --token N (the worker's
generation, from its lease or lock), --owner NAME, --status TEXT, --new-order ID (also insert
an order), --pause-after-read (stop this process after loading, as a long pause would:
`kill -CONT` it), --no-recipe (leave the session events out, to see what the fence does then).

Exit codes:
    0  the orders were written
    1  the database failed
    2  bad command line
    3  fenced: a newer generation owns the region; nothing of this run was written
"""

import argparse
import os
import signal
import sys

from sqlalchemy import String, create_engine, event, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.orm.exc import StaleDataError

EXIT_WRITTEN = 0
EXIT_FAILED = 1
EXIT_FENCED = 3


class Base(DeclarativeBase):
    pass


class Order(Base):
    __tablename__ = "orders"
    id: Mapped[int] = mapped_column(primary_key=True)
    region: Mapped[str] = mapped_column(String)
    status: Mapped[str] = mapped_column(String)
    updated_by: Mapped[str] = mapped_column(String, nullable=True)
    fence_token: Mapped[int] = mapped_column(default=1)


def fenced_sessions(token, owner):
    """A Session class whose every transaction states the worker's generation and is refused
    at commit if the fence refused any of its writes."""

    class FencedSession(Session):
        pass

    @event.listens_for(FencedSession, "after_begin")
    def state_generation(session, transaction, connection):
        connection.execute(
            text("SELECT fencewatch.begin(token => :token, owner => :owner)"),
            {"token": token, "owner": owner},
        )

    @event.listens_for(FencedSession, "before_commit")
    def refuse_refused(session):
        session.flush()
        refused = session.execute(text("SELECT fencewatch.refused()")).scalar_one()
        if refused:
            raise StaleDataError(f"the fence refused {refused} write(s) of this transaction")

    return FencedSession


def fence_code(error):
    """The fence's SQLSTATE (FW409, FW403, FW400) of a database error, if it is one."""
    code = getattr(getattr(error, "orig", None), "sqlstate", None)
    return code if code and code.startswith("FW") else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default=os.environ.get("DATABASE_URL"))
    parser.add_argument("--region", default="eu")
    parser.add_argument("--token", type=int, required=True)
    parser.add_argument("--owner", required=True)
    parser.add_argument("--status", required=True)
    parser.add_argument("--new-order", type=int)
    parser.add_argument("--pause-after-read", action="store_true")
    parser.add_argument("--no-recipe", action="store_true")
    args = parser.parse_args()
    if not args.database:
        parser.error("give --database or set DATABASE_URL")
    url = args.database
    for scheme in ("postgres://", "postgresql://"):
        if url.startswith(scheme):
            url = "postgresql+psycopg://" + url[len(scheme):]
    engine = create_engine(url)
    session_class = Session if args.no_recipe else fenced_sessions(args.token, args.owner)
    try:
        with session_class(engine) as session:
            orders = session.scalars(select(Order).where(Order.region == args.region)).all()
            print(f"read {len(orders)} orders of {args.region}", flush=True)
            if args.pause_after_read:
                os.kill(os.getpid(), signal.SIGSTOP)
            for order in orders:
                order.status = args.status
                order.updated_by = args.owner
            if args.new_order is not None:
                session.add(Order(id=args.new_order, region=args.region, status=args.status,
                                  updated_by=args.owner, fence_token=args.token))
            try:
                session.commit()
            except StaleDataError as error:
                session.rollback()
                print(f"fenced: {error}", flush=True)
                return EXIT_FENCED
            except DBAPIError as error:
                session.rollback()
                if fence_code(error):
                    print(f"fenced: {error.orig}", flush=True)
                    return EXIT_FENCED
                raise
    except DBAPIError as error:
        print(f"database error: {error.orig}", file=sys.stderr)
        return EXIT_FAILED
    print(f"wrote {len(orders)} orders as {args.owner}, generation {args.token}", flush=True)
    return EXIT_WRITTEN


if __name__ == "__main__":
    sys.exit(main())
