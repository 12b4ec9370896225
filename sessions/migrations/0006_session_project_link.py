"""Sessions link to a brain Project instead of naming one (docs/truth.md).

Each session's project comes from its `project_root` (a project whose folders or local repository hold
it), else from the old `project` text (a project of that name); a name no project has yet becomes a
project without a repository, so nothing the text said is lost. Notes then link to their session's
project (or the one their frontmatter or provenance names).
"""

import re

from django.db import migrations, models
import django.db.models.deletion

NAME = re.compile(r"[^A-Za-z0-9._-]+")


def _folder_name(path):
    return re.split(r"[\\/]+", path.strip().rstrip("/\\"))[-1]


def _for_root(projects, root):
    root = root.replace("\\", "/").rstrip("/")
    best, length = None, -1
    for project in projects:
        places = [p for p in project.folders if isinstance(p, str)]
        if project.repo and "://" not in project.repo:
            places.append(project.repo)
        for place in places:
            place = place.replace("\\", "/").rstrip("/")
            if "/" in place and (root == place or root.startswith(place + "/")) and len(place) > length:
                best, length = project, len(place)
    return best


def link(apps, schema_editor):
    Project = apps.get_model("brain", "Project")
    AgentSession = apps.get_model("agent_sessions", "AgentSession")
    Note = apps.get_model("brain", "Note")
    projects = list(Project.objects.all())
    by_name = {project.name: project for project in projects}
    for session in AgentSession.objects.exclude(project_text="", project_root="").iterator():
        project = _for_root(projects, session.project_root) if session.project_root else None
        name = session.project_text or (_folder_name(session.project_root) if session.project_root else "")
        name = NAME.sub("-", name).strip("-.")[:200]
        if project is None and name:
            project = by_name.get(name)
            if project is None:
                folders = [session.project_root] if session.project_root.startswith("/") else [name]
                project = Project.objects.create(name=name, folders=folders, branch="main")
                projects.append(project)
                by_name[name] = project
        if project is not None:
            AgentSession.objects.filter(pk=session.pk).update(project_link=project)
    sessions = dict(AgentSession.objects.exclude(project_link=None).values_list("external_id", "project_link_id"))
    for note in Note.objects.filter(project=None).iterator():
        named = (note.frontmatter or {}).get("project") or (note.provenance or {}).get("project")
        project_id = by_name[named].pk if isinstance(named, str) and named in by_name else sessions.get(note.session_id)
        if project_id:
            Note.objects.filter(pk=note.pk).update(project_id=project_id)


def unlink(apps, schema_editor):
    AgentSession = apps.get_model("agent_sessions", "AgentSession")
    for session in AgentSession.objects.exclude(project_link=None).select_related("project_link"):
        AgentSession.objects.filter(pk=session.pk).update(project_text=session.project_link.name)


class Migration(migrations.Migration):
    dependencies = [
        ("agent_sessions", "0005_role_permissions"),
        ("brain", "0012_truth_projects_anchors_supersession"),
    ]

    operations = [
        migrations.RenameField("agentsession", "project", "project_text"),
        migrations.AddField(
            model_name="agentsession",
            name="project_link",
            field=models.ForeignKey(
                blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="sessions",
                to="brain.project",
            ),
        ),
        migrations.RunPython(link, unlink),
        migrations.RemoveField("agentsession", "project_text"),
        migrations.RenameField("agentsession", "project_link", "project"),
    ]
