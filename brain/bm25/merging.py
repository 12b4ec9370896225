"""Merging: a new base segment from an old base's live documents and a delta, without tokenising again."""

from __future__ import annotations

import numpy as np

from brain.bm25.segments import Segment, build_segment


def merge_segments(base: Segment, alive: np.ndarray | None, delta: Segment, version: int) -> Segment:
    """A new base: the live documents of `base` plus every document of `delta`. No text is tokenised again."""
    parts = []
    for seg, keep in ((base, alive), (delta, None)):
        n = len(seg)
        if keep is None:
            keep = np.ones(n, dtype=bool)
        term_of_posting = np.repeat(np.arange(len(seg.keys), dtype=np.int64), np.diff(seg.offsets))
        live = keep[seg.post_docs]
        docs_kept = np.flatnonzero(keep)
        renumber = np.full(n, -1, dtype=np.int64)
        renumber[docs_kept] = np.arange(len(docs_kept))
        parts.append(
            (
                seg.note_ids[docs_kept],
                [seg.labels[c] for c in seg.status_codes[docs_kept]],
                [seg.labels[c] for c in seg.wing_codes[docs_kept]],
                [seg.labels[c] for c in seg.hall_codes[docs_kept]],
                seg.lengths[docs_kept],
                renumber[seg.post_docs[live]],
                seg.keys[term_of_posting[live]],
                seg.post_tfs[live],
                seg.fingerprints[docs_kept],
            )
        )
    (
        (ids_a, st_a, wi_a, ha_a, len_a, doc_a, key_a, tf_a, fp_a),
        (ids_b, st_b, wi_b, ha_b, len_b, doc_b, key_b, tf_b, fp_b),
    ) = parts
    return build_segment(
        version=version,
        note_ids=np.concatenate([ids_a, ids_b]),
        statuses=st_a + st_b,
        wings=wi_a + wi_b,
        halls=ha_a + ha_b,
        lengths=np.concatenate([len_a, len_b]),
        doc_of=np.concatenate([doc_a, doc_b + len(ids_a)]),
        keys=np.concatenate([key_a, key_b]),
        tfs=np.concatenate([tf_a, tf_b]),
        fingerprints=np.concatenate([fp_a, fp_b]),
    )
