"""Opening a tuning database: the connection, the schema revision check, first-time creation
and ``db upgrade``. Every database error leaves as one :class:`AscendTuneError` line naming the
database (its password masked)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event, exc

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.db import location, schema

# SQLite: how long a writer waits for another's lock before giving up (parallel runs).
BUSY_TIMEOUT_S = 60.0
_VERSION_TABLE = "alembic_version"


def _first_line(error: BaseException) -> str:
    orig = getattr(error, "orig", None) or error
    text = str(orig).strip().splitlines()
    return text[0] if text else type(orig).__name__


class Database:
    """One tuning database. ``open`` checks the schema (creating it in an empty database);
    ``connect`` gives a transaction whose database errors become one line."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.shown = location.shown(url)
        self.engine = _engine(url)
        self._checked = False

    # ---- errors -------------------------------------------------------------------------

    def error(self, what: str) -> AscendTuneError:
        return AscendTuneError(f"database {self.shown}: {what}")

    @contextlib.contextmanager
    def _translated(self) -> Iterator[None]:
        try:
            yield
        except exc.SQLAlchemyError as error:
            raise self.error(_first_line(error)) from None
        except ImportError as error:  # a driver that is not installed
            raise self.error(f"{error}: pip install 'ascend-tune[db]'") from None

    @contextlib.contextmanager
    def connect(self) -> Iterator[sa.Connection]:
        """A transaction (committed at the end) on a database whose schema is this release's."""
        self.open()
        with self._translated(), self.engine.begin() as conn:
            yield conn

    @contextlib.contextmanager
    def reading(self) -> Iterator[sa.Connection]:
        self.open()
        with self._translated(), self.engine.connect() as conn:
            yield conn

    # ---- schema -------------------------------------------------------------------------

    def revision(self) -> str | None:
        """The schema revision recorded in the database; None when it has no tables of ours
        and none of anyone else's (empty). Refuses a database of another tool."""
        with self._translated(), self.engine.connect() as conn:
            names = set(sa.inspect(conn).get_table_names())
            ours = set(schema.TABLES)
            if _VERSION_TABLE in names:
                row = conn.execute(sa.text(f"SELECT version_num FROM {_VERSION_TABLE}")).first()
                if row is not None and (row[0] in schema.REVISIONS or names & ours):
                    return str(row[0])
            if not names:
                return None
        raise self.error("not an ascend-tune tuning database (it holds other tables: "
                         f"{', '.join(sorted(names)[:4])}); give another --db")

    def open(self) -> None:
        """Check the schema once: create it in an empty database, refuse an older one (``db
        upgrade``) or a newer one (written by a newer ascend-tune)."""
        if self._checked:
            return
        found = self.revision()
        if found is None:
            self._create()
            found = self.revision()
        if found != schema.HEAD:
            raise self.error(self._mismatch(found))
        self._checked = True

    def _mismatch(self, found: str | None) -> str:
        if found in schema.REVISIONS:
            return (f"schema revision {found} is older than this ascend-tune's "
                    f"{schema.HEAD}: run `ascend-tune db upgrade`")
        return (f"schema revision {found} was written by a newer ascend-tune (this one "
                f"reads up to {schema.HEAD}): upgrade ascend-tune")

    def _create(self) -> None:
        """An empty database: the tables as the migrations build them, stamped at HEAD
        (Alembic's create_all-then-stamp; the migrations themselves run only on upgrade)."""
        try:
            with self.engine.begin() as conn:
                schema.metadata.create_all(conn)
                version = sa.Table(_VERSION_TABLE, sa.MetaData(),
                                   sa.Column("version_num", sa.String(32), primary_key=True))
                version.create(conn, checkfirst=True)
                if conn.execute(sa.select(version)).first() is None:
                    conn.execute(version.insert().values(version_num=schema.HEAD))
        except exc.IntegrityError:
            pass  # another process created it at the same time
        except exc.OperationalError as error:
            if "already exists" not in str(error):
                raise self.error(_first_line(error)) from None
        except exc.ProgrammingError as error:  # PostgreSQL's "duplicate table"
            if "already exists" not in str(error):
                raise self.error(_first_line(error)) from None

    def upgrade(self) -> tuple[str | None, str]:
        """Run the migrations up to HEAD (``db upgrade``): the revision before and after."""
        before = self.revision()
        if before is None:
            self.migrate("head")  # the migrations themselves, from nothing
            return None, schema.HEAD
        if before not in schema.REVISIONS:
            raise self.error(self._mismatch(before))
        if before != schema.HEAD:
            self.migrate("head")
        self._checked = False
        return before, schema.HEAD

    def migrate(self, target: str) -> None:
        """Alembic's upgrade to ``target`` on this database (imported only here: it is slow
        to import and only `db upgrade` needs it)."""
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
        with self._translated(), self.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, target)

    def dispose(self) -> None:
        self.engine.dispose()


def _engine(url: str) -> sa.Engine:
    try:
        parsed = sa.engine.make_url(url)
    except exc.ArgumentError:
        raise AscendTuneError(f"database {location.shown(url)}: not a database URL") from None
    kwargs: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:":
            folder = Path(database).parent
            if not folder.is_dir():
                try:
                    folder.mkdir(parents=True, exist_ok=True)
                except OSError as error:
                    raise AscendTuneError(f"database {location.shown(url)}: cannot create "
                                          f"{folder}: {error.strerror}") from None
        kwargs["connect_args"] = {"timeout": BUSY_TIMEOUT_S}
    else:
        kwargs["pool_pre_ping"] = True
        if parsed.get_backend_name() == "postgresql":
            kwargs["connect_args"] = {"connect_timeout": 10}
    try:
        engine = sa.create_engine(parsed, **kwargs)
    except (exc.ArgumentError, exc.NoSuchModuleError) as error:
        raise AscendTuneError(f"database {location.shown(url)}: {_first_line(error)}") from None
    except ImportError as error:
        raise AscendTuneError(f"database {location.shown(url)}: {error}: pip install "
                              "'ascend-tune[db]'") from None
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL: readers never block the writer and a killed writer leaves the file consistent;
    # the busy timeout makes parallel writers wait their turn instead of failing.
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        with contextlib.suppress(Exception):  # a read-only file stays in its journal mode
            cursor.execute("PRAGMA journal_mode = WAL")
    finally:
        cursor.close()
