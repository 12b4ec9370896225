"""The brain's size limits, stated once.

The models' column sizes, the input definitions (`brain.inputs`: MCP schemas, REST serializers, forms)
and the actions' checks all read these. The body's limit is a setting (BRAIN_MAX_NOTE_BYTES), checked by
the actions; frontmatter limits are `hyperguild.lib.markdown.check_frontmatter_limits`.
"""

MAX_TITLE_LENGTH = 300
MAX_SLUG_LENGTH = 200
MAX_SEGMENT_LENGTH = 100  # one slug segment; a wing or a hall is one (one folder)
MAX_PLACE_LENGTH = MAX_SEGMENT_LENGTH
MAX_SESSION_ID_LENGTH = 200
MAX_REASON_LENGTH = 500
MAX_TAG_LENGTH = 100
# Searching (brain_query, POST /query, brain_answer's question, brain_context).
MAX_QUERY_LENGTH = 2000
MAX_SEARCH_LIMIT = 50
MAX_TAGS = 10
