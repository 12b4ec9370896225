# Joins three migrations written in parallel (area descriptions, the BM25 change log, note revisions);
# they touch different tables, so no operation is needed.
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("brain", "0005_area_description_and_slug_suffix_index"),
        ("brain", "0005_index_change_log"),
        ("brain", "0005_note_revisions"),
    ]

    operations = []
