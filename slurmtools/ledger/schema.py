"""Create and migrate the ledger schema (Alembic), and generate sql/schema.<dialect>.sql.

    python -m slurmtools.ledger.schema --write    # regenerate sql/*.sql from the models
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from pathlib import Path

from sqlalchemy import Engine, inspect, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.schema import CreateIndex, CreateTable

from slurmtools.ledger.models import Base

DIALECTS = {"sqlite": sqlite.dialect(), "postgresql": postgresql.dialect()}  # type: ignore[no-untyped-call]
SQL_DIR = Path(__file__).resolve().parents[2] / "sql"


def alembic_config(connection: object) -> object:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("slurmtools.ledger") / "migrations"))
    cfg.attributes["connection"] = connection
    return cfg


def upgrade(engine: Engine) -> None:
    """Bring the database to the newest schema (a no-op when it is there)."""
    from alembic import command

    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "head")  # type: ignore[arg-type]


#: The newest migration. Checked against Alembic's scripts by a test; lets writers confirm the
#: schema with one query instead of importing Alembic in every process.
HEAD = "0009"


def alembic_head() -> str:
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config(None))  # type: ignore[arg-type]
    (head,) = script.get_heads()
    return str(head)


def is_current(engine: Engine) -> bool:
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return False
        return {r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version"))} == {HEAD}


def ensure(engine: Engine) -> None:
    if not is_current(engine):
        from slurmtools.ledger.db import is_readonly

        if is_readonly(engine):
            raise RuntimeError("the ledger's schema is not current, and this user cannot upgrade it "
                               "(read-only); an admin runs `slurmtools ledger init`")
        upgrade(engine)


def generate_sql(dialect_name: str) -> str:
    dialect = DIALECTS[dialect_name]
    out = [f"-- slurmtools ledger schema for {dialect_name}, generated from slurmtools/ledger/models.py.",
           "-- Do not edit: python -m slurmtools.ledger.schema --write", ""]
    for table in Base.metadata.sorted_tables:
        out.append(str(CreateTable(table).compile(dialect=dialect)).strip() + ";\n")
        for index in sorted(table.indexes, key=lambda i: str(i.name)):
            out.append(str(CreateIndex(index).compile(dialect=dialect)).strip() + ";\n")
    return "\n".join(line.rstrip() for line in "\n".join(out).splitlines()) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="write sql/schema.<dialect>.sql")
    parser.add_argument("--check", action="store_true", help="exit 1 if sql/*.sql differ from the models")
    args = parser.parse_args(argv)
    drift = False
    for name in DIALECTS:
        path = SQL_DIR / f"schema.{name}.sql"
        text = generate_sql(name)
        if args.write:
            path.write_text(text)
            print(f"wrote {path}")
        elif args.check:
            if not path.exists() or path.read_text() != text:
                print(f"{path} differs from the models: run python -m slurmtools.ledger.schema --write")
                drift = True
        else:
            sys.stdout.write(text)
    return 1 if drift else 0


if __name__ == "__main__":
    sys.exit(main())
