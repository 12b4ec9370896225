from django.apps import AppConfig
from django.conf import settings


class BrainConfig(AppConfig):
    name = "brain"
    verbose_name = "brain"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the brain endpoint and its tools, then brain_answer, brain_context, the note-changing tools and the prompts.
        from brain import (  # noqa: F401
            answer_tools,
            backlog,
            mcp_prompts,
            note_tools,
            passage_reader,
            system_checks,
            tools,
            truth_tools,
        )
        from brain.bm25.live import warm_in_background
        from brain.contributions import home_counts
        from brain.metrics import bm25_metrics, embedding_metrics
        from brain.tasks import EMBED_TASK, resume_embedding_backlog, resume_passage_reading, schedules
        from hyperguild.contributions import (
            register_home_counts,
            register_schedules,
            register_serve_start,
            register_task_queue,
            register_web_start,
        )
        from observability.health import register_health_section
        from observability.metrics import register_metric_source

        register_home_counts(home_counts)
        register_home_counts(backlog.home_counts)
        register_schedules(schedules)
        register_task_queue(EMBED_TASK, settings.EMBED_QUEUE)
        register_serve_start(resume_embedding_backlog)
        register_serve_start(resume_passage_reading)
        register_web_start(warm_in_background)
        register_web_start(passage_reader.warm_in_background)
        register_health_section("embeddings", backlog.health_section)
        register_metric_source("embeddings", embedding_metrics)
        register_metric_source("bm25", bm25_metrics)
