"""Roles are Django groups, made by migrations: what each may do is a set of permissions.

- `reader`: browse and search (the view permissions);
- `member`: the ordinary teammate: also raw notes for review (brain.add_note), their own sessions and the
  retrospectives of them; judges nothing;
- `reviewer`: promote, reject, merge, edit, re-file, demote notes and undo (brain.review_note);
- `curator`: approve, reject, edit, swap and export training examples (agent_sessions.curate_trainingexample);
- `operator`: run skills on /mcp/supervisor and /mcp/routing, with their commands (supervisor.run_skill), and
  see the service's metrics (hyperguild.view_metrics);
- staff (`is_staff`) may do all of it, and superusers hold every permission (the admin).

The core makes the groups (hyperguild migrations 0005, 0006 and 0010); each app's migration grants its own
permissions to them with `hyperguild.lib.grants.grant_permissions` (in the core: the core's own migrations use it
too, and the core imports no app), so the core names no app.
"""

from __future__ import annotations

READER, MEMBER, REVIEWER, CURATOR, OPERATOR = "reader", "member", "reviewer", "curator", "operator"
ROLES = (READER, MEMBER, REVIEWER, CURATOR, OPERATOR)
