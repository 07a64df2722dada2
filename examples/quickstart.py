#!/usr/bin/env python3
"""The whole loop on an example app's database: adopt it, fork a world, change it there, see the
diff and the merge preview, merge, and undo the merge.

    python examples/quickstart.py ./demo/shop

Writes a small shop's SQLite file (customers, products, orders and their lines, as an app would
have it) beside the folder, then drives the real `chronos` command, printing each command and
its output.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

CHRONOS = str(Path(sys.executable).with_name("chronos"))

SHOP = """
create table customers(id integer primary key, name text not null, email text unique);
create table products(id integer primary key, name text not null, category text,
                      price real not null check (price >= 0));
create table orders(id integer primary key, customer_id integer references customers(id),
                    placed text not null, status text not null default 'open');
create table order_lines(order_id integer references orders(id),
                         product_id integer references products(id), quantity integer,
                         primary key (order_id, product_id)) without rowid;
insert into customers values (1, 'Ada', 'ada@example.org'), (2, 'Grace', 'grace@example.org'),
                             (3, 'Alan', 'alan@example.org');
insert into products values (1, 'Notebook', 'paper', 3.5), (2, 'Fountain pen', 'pens', 24.0),
                            (3, 'Ink', 'pens', 6.25), (4, 'Sketchbook', 'paper', 9.0);
insert into orders values (1, 1, '2026-11-02', 'paid'), (2, 2, '2026-11-03', 'paid'),
                          (3, 1, '2026-11-20', 'open'), (4, 3, '2026-11-21', 'cancelled');
insert into order_lines values (1, 1, 4), (1, 3, 1), (2, 2, 1), (3, 4, 2), (4, 1, 1);
"""

REPORT = (
    "select p.category, count(distinct o.id) as orders, sum(l.quantity * p.price) as revenue "
    "from order_lines l join orders o on o.id = l.order_id "
    "join products p on p.id = l.product_id "
    "where o.status != 'cancelled' group by p.category order by p.category"
)


def chronos(*args: str) -> None:
    shown = " ".join(a if " " not in a and "'" not in a else repr(a) for a in args)
    print(f"$ chronos {shown}")
    proc = subprocess.run([CHRONOS, *args], capture_output=True, text=True)
    print((proc.stdout + proc.stderr).rstrip(), end="\n\n")
    if proc.returncode != 0:
        sys.exit(proc.returncode)


def app_file(path: Path) -> None:
    """The app's own database: a plain SQLite file, as the app left it."""
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as conn:
        conn.executescript(SHOP)
    conn.close()


def main() -> None:
    shop = Path(sys.argv[1] if len(sys.argv) > 1 else "demo/shop")
    shutil.rmtree(shop, ignore_errors=True)
    shop.parent.mkdir(parents=True, exist_ok=True)
    source = shop.with_name(shop.name + ".sqlite")
    app_file(source)
    db = str(shop)
    print("# adopt the app's database: main is its data, every change from now on is kept\n")
    chronos("init", db, "--from", str(source))
    chronos(db, "sql", REPORT)
    print("# fork a world: a private copy to change freely (instant, whatever the size)\n")
    chronos(db, "fork", "pen-prices", "--meta", '{"task": "raise pen prices 10%"}')
    raise_prices = "update products set price = round(price * 1.1, 2) where category = 'pens'"
    chronos(db, "sql", "-b", "pen-prices", raise_prices)
    chronos(
        db,
        "sql",
        "-b",
        "pen-prices",
        "delete from order_lines where order_id in (select id from orders where status = "
        "'cancelled'); delete from orders where status = 'cancelled'",
    )
    chronos(db, "sql", "-b", "pen-prices", REPORT)
    print("# main is as it was until the world is merged\n")
    chronos(db, "sql", "select name, price from products where category = 'pens'")
    print("# what the world changed, and what a merge would do\n")
    chronos(db, "diff", "pen-prices")
    chronos(db, "merge-preview", "pen-prices")
    chronos(db, "merge", "pen-prices")
    chronos(db, "sql", REPORT)
    print("# changed your mind? undo the merge: main's rows are put back\n")
    chronos(db, "undo-merge", "pen-prices")
    chronos(db, "sql", REPORT)
    chronos(db, "history", "main", "--limit", "4")


if __name__ == "__main__":
    main()
