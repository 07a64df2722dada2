"""An invoicing app's database and its report queries, for bench_worlds' ``reports`` section.

Seven tables the way a music store's invoicing keeps them (artists, albums, genres, tracks,
customers, invoices, invoice lines), with indexes on the foreign keys, and the reports such an
app runs: an invoice's detail in line order, a customer's invoices with their line counts, tracks
per genre, revenue by artist, sales by country and genre. A world changes 1% of the tracks,
invoices and lines (prices, new invoices with lines, deleted lines) and 1% of the customers.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import apsw

SCHEMA = """
create table artists(id integer primary key, name text not null);
create table albums(id integer primary key, artist_id int not null references artists(id),
                    title text not null);
create table genres(id integer primary key, name text not null);
create table tracks(id integer primary key, album_id int not null references albums(id),
                    genre_id int references genres(id), name text not null, price real not null);
create table customers(id integer primary key, name text not null, country text not null);
create table invoices(id integer primary key, customer_id int not null references customers(id),
                      day text not null, total real not null default 0);
create table invoice_lines(id integer primary key,
                           invoice_id int not null references invoices(id),
                           track_id int not null references tracks(id),
                           price real not null, qty int not null check (qty > 0));
create index albums_artist on albums(artist_id);
create index tracks_album on tracks(album_id);
create index tracks_genre on tracks(genre_id);
create index invoices_customer on invoices(customer_id, day);
create index lines_invoice on invoice_lines(invoice_id);
create index lines_track on invoice_lines(track_id);
"""

COUNTRIES = ("DE", "FR", "US", "BR", "JP", "IN", "CA", "GB", "ES", "IT")
GENRES = 25


@dataclass(frozen=True)
class Report:
    name: str
    sql: str
    params: str | None  # "invoice" or "customer": run once per such id; None: once


REPORTS = (
    Report(
        "invoice detail, order by",
        "select l.id, t.name, a.title, r.name, l.price, l.qty from invoice_lines l "
        "join tracks t on t.id = l.track_id join albums a on a.id = t.album_id "
        "join artists r on r.id = a.artist_id where l.invoice_id = ? order by l.id",
        "invoice",
    ),
    Report(
        "a customer's invoices with line counts",
        "select i.id, i.day, count(l.id), sum(l.price * l.qty) from invoices i "
        "join invoice_lines l on l.invoice_id = i.id where i.customer_id = ? "
        "group by i.id order by i.day desc, i.id",
        "customer",
    ),
    Report(
        "tracks per genre",
        "select g.name, count(*) from tracks t join genres g on g.id = t.genre_id "
        "group by g.id order by 2 desc, g.name",
        None,
    ),
    Report(
        "revenue by artist (top 10)",
        "select r.name, sum(l.price * l.qty) from invoice_lines l "
        "join tracks t on t.id = l.track_id join albums a on a.id = t.album_id "
        "join artists r on r.id = a.artist_id group by r.id order by 2 desc, r.name limit 10",
        None,
    ),
    Report(
        "sales by country and genre (top 20)",
        "select c.country, g.name, sum(l.price * l.qty) from invoice_lines l "
        "join invoices i on i.id = l.invoice_id join customers c on c.id = i.customer_id "
        "join tracks t on t.id = l.track_id join genres g on g.id = t.genre_id "
        "group by c.country, g.id order by 3 desc, 1, 2 limit 20",
        None,
    ),
)


@dataclass(frozen=True)
class Store:
    """How many rows of each (the lines: ``invoices * 5``)."""

    artists: int
    tracks: int
    customers: int
    invoices: int

    @property
    def albums(self) -> int:
        return max(1, self.tracks // 10)

    @property
    def lines(self) -> int:
        return self.invoices * 5


def build(path: Path, store: Store, seed: int = 11) -> Path:
    """A plain SQLite file holding the store."""
    rng = random.Random(seed)
    conn = apsw.Connection(str(path))
    conn.execute("pragma journal_mode = wal")
    with conn:
        conn.execute(SCHEMA)
        conn.executemany(
            "insert into artists values (?, ?)",
            [(i, f"artist {i}") for i in range(1, store.artists + 1)],
        )
        conn.executemany(
            "insert into albums values (?, ?, ?)",
            [
                (i, rng.randrange(1, store.artists + 1), f"album {i}")
                for i in range(1, store.albums + 1)
            ],
        )
        conn.executemany(
            "insert into genres values (?, ?)", [(i, f"genre {i}") for i in range(1, GENRES + 1)]
        )
        conn.executemany(
            "insert into tracks values (?, ?, ?, ?, ?)",
            [
                (
                    i,
                    rng.randrange(1, store.albums + 1),
                    rng.randrange(1, GENRES + 1),
                    f"track {i}",
                    rng.choice((0.99, 1.29, 1.99)),
                )
                for i in range(1, store.tracks + 1)
            ],
        )
        conn.executemany(
            "insert into customers values (?, ?, ?)",
            [(i, f"customer {i}", rng.choice(COUNTRIES)) for i in range(1, store.customers + 1)],
        )
        conn.executemany(
            "insert into invoices(id, customer_id, day) values (?, ?, ?)",
            [
                (i, rng.randrange(1, store.customers + 1), f"2026-{rng.randrange(1, 13):02}-01")
                for i in range(1, store.invoices + 1)
            ],
        )
        conn.executemany(
            "insert into invoice_lines values (?, ?, ?, ?, ?)",
            [
                (
                    i,
                    (i - 1) // 5 + 1,
                    rng.randrange(1, store.tracks + 1),
                    rng.choice((0.99, 1.29, 1.99)),
                    rng.randrange(1, 4),
                )
                for i in range(1, store.lines + 1)
            ],
        )
    conn.close()
    return path


def changes(store: Store, seed: int = 12) -> list[tuple[str, tuple]]:
    """What a world does: 1% of the tracks repriced, 1% of the customers moved, 1% more
    invoices (each with 5 lines), 1% of the lines' quantities changed and 0.5% deleted."""
    rng = random.Random(seed)
    out: list[tuple[str, tuple]] = []
    for i in rng.sample(range(1, store.tracks + 1), max(1, store.tracks // 100)):
        out.append(("update tracks set price = price + 0.5 where id = ?", (i,)))
    for i in rng.sample(range(1, store.customers + 1), max(1, store.customers // 100)):
        out.append(("update customers set country = ? where id = ?", (rng.choice(COUNTRIES), i)))
    for k in range(max(1, store.invoices // 100)):
        invoice = store.invoices + 1 + k
        out.append(
            (
                "insert into invoices(id, customer_id, day) values (?, ?, '2026-12-06')",
                (invoice, rng.randrange(1, store.customers + 1)),
            )
        )
        for j in range(5):
            out.append(
                (
                    "insert into invoice_lines values (?, ?, ?, 1.99, ?)",
                    (
                        store.lines + 1 + k * 5 + j,
                        invoice,
                        rng.randrange(1, store.tracks + 1),
                        rng.randrange(1, 4),
                    ),
                )
            )
    lines = rng.sample(range(1, store.lines + 1), max(2, store.lines // 100 * 3 // 2))
    cut = len(lines) * 2 // 3
    for i in lines[:cut]:
        out.append(("update invoice_lines set qty = qty + 1 where id = ?", (i,)))
    for i in lines[cut:]:
        out.append(("delete from invoice_lines where id = ?", (i,)))
    return out


def ids(store: Store, count: int, seed: int = 13) -> dict[str, list[tuple]]:
    """The invoices and customers the per-id reports are run for."""
    rng = random.Random(seed)
    return {
        "invoice": [(rng.randrange(1, store.invoices + 1),) for _ in range(count)],
        "customer": [(rng.randrange(1, store.customers + 1),) for _ in range(count)],
    }
