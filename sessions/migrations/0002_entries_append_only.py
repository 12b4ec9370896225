"""Session entries are append-only: the database itself refuses an UPDATE."""

from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION agent_sessions_entry_no_update() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'session entries are append-only (agent_sessions_sessionentry id %)', OLD.id;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER agent_sessions_entry_no_update
    BEFORE UPDATE ON agent_sessions_sessionentry
    FOR EACH ROW EXECUTE FUNCTION agent_sessions_entry_no_update();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS agent_sessions_entry_no_update ON agent_sessions_sessionentry;
DROP FUNCTION IF EXISTS agent_sessions_entry_no_update();
"""


class Migration(migrations.Migration):
    dependencies = [("agent_sessions", "0001_initial")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
