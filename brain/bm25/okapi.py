"""The Okapi BM25 parameters, shared by scoring (`snapshot`) and the block bounds segments store (`segments`)."""

# Okapi parameters tuned for short scientific/technical notes (BEIR's
# Elasticsearch baseline uses k1 0.9, b 0.4 as well).
K1 = 0.9
B = 0.4
EPSILON = 0.25  # rank-bm25's floor for negative idf, as a fraction of the mean idf
