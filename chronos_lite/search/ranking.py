"""Ranking a find's rows: by BM25, by dot product, or both fused (see ``find``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..storage.db import Session
from ..storage.fetch import all_rows, one_row
from . import vectors
from .docs import Docs, docid_of

RRF_K = 60  # reciprocal rank fusion's constant (Cormack, Clarke and Buettcher, 2009)

Scores = dict[str, float | None]


@dataclass
class Ranking:
    """A find's rows on a branch: ``join`` (the rows as ``s``), ``where`` (an SQL condition on
    them, ``params`` its values), ``words`` (an FTS5 query) and ``fts`` (the index it reads)."""

    session: Session
    d: Docs
    join: str
    where: str
    params: list[Any]
    words: str | None
    fts: str

    def best(
        self, asked: vectors.Ask | None, page: tuple[int, int]
    ) -> tuple[int, list[tuple[int, Scores]]]:
        """How many rows match, and the page's rows (docid, scores) best first."""
        limit, offset = page
        if asked is None:
            return self._text_page(limit, offset)
        if self.words is None:
            best, total = vectors.ranked(
                self.session, self.d, asked, self.join, self.where, self.params, limit + offset
            )
            return total, [(docid, {"vector": score}) for docid, score in best[offset:]]
        return self._fused(asked, limit, offset)

    # --- text ---------------------------------------------------------------------------------

    def _text_from(self) -> tuple[str, list[Any]]:
        bare = self.fts.split(".")[-1]
        clause = f"FROM {self.fts} WHERE {bare} MATCH ?"
        if self.where:
            of = docid_of(self.d)
            clause += f" AND rowid IN (SELECT {of} FROM {self.join} WHERE {self.where})"
        return clause, [self.words, *self.params]

    def _text_ranked(self, limit: int = -1, offset: int = 0) -> list[tuple[int, float]]:
        """(docid, text score), best first: FTS5's bm25() negated (higher is better)."""
        clause, params = self._text_from()
        bare = self.fts.split(".")[-1]
        rows = all_rows(
            self.session.conn.execute(
                f"SELECT rowid, bm25({bare}) {clause} ORDER BY 2, 1 LIMIT ? OFFSET ?",
                [*params, limit, offset],
            )
        )
        return [(docid, -score) for docid, score in rows]

    def _text_page(self, limit: int, offset: int) -> tuple[int, list[tuple[int, Scores]]]:
        clause, params = self._text_from()  # (counting apart costs less than a window's count)
        matches = one_row(self.session.conn.execute(f"SELECT count(*) {clause}", params))[0]
        ranked = self._text_ranked(limit, offset)
        return matches, [(docid, {"text": score}) for docid, score in ranked]

    # --- both ---------------------------------------------------------------------------------

    def _fused(
        self, asked: vectors.Ask, limit: int, offset: int
    ) -> tuple[int, list[tuple[int, Scores]]]:
        texts = self._text_ranked()
        text_rank = {docid: place for place, (docid, _s) in enumerate(texts, start=1)}
        text_score = dict(texts)
        vector_rank = vectors.all_ranked(
            self.session, self.d, asked, self.join, self.where, self.params
        )
        fused = {
            docid: (1 / (RRF_K + text_rank[docid]) if docid in text_rank else 0.0)
            + (1 / (RRF_K + vector_rank[docid]) if docid in vector_rank else 0.0)
            for docid in {*text_rank, *vector_rank}
        }
        order = sorted(fused, key=lambda docid: (-fused[docid], docid))
        shown = order[offset : offset + limit]
        ranked = [docid for docid in shown if docid in vector_rank]
        exact = vectors.exact(self.session.conn, self.d, asked, ranked, self.join)
        return len(order), [
            (
                docid,
                {"text": text_score.get(docid), "vector": exact.get(docid), "fused": fused[docid]},
            )
            for docid in shown
        ]
