from django.db import connection


def test_the_suite_runs_on_postgresql_with_pgvector(db):
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        assert cursor.fetchone()[0].startswith("0.8")
