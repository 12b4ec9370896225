"""The ledger's models, moved from the core (issue 49): their tables stay where they are (`db_table`),
so only Django's record of which app owns them changes; nothing is written to the database here."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("hyperguild", "0010_member_role"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='BudgetReservation',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                        ('amount_usd', models.DecimalField(decimal_places=6, max_digits=12)),
                        ('what', models.CharField(max_length=200)),
                        ('person', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'hyperguild_budgetreservation',
                    },
                ),
                migrations.CreateModel(
                    name='PersonBudget',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('daily_usd', models.DecimalField(blank=True, decimal_places=2, max_digits=10, null=True)),
                        ('monthly_usd', models.DecimalField(blank=True, decimal_places=2, max_digits=10, null=True)),
                        ('person', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='budget', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'hyperguild_personbudget',
                    },
                ),
                migrations.CreateModel(
                    name='ModelCall',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('created_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                        ('service', models.CharField(blank=True, default='', help_text='the caller when no person is', max_length=100)),
                        ('session_id', models.CharField(blank=True, db_index=True, default='', max_length=200)),
                        ('project', models.CharField(blank=True, default='', max_length=1000)),
                        ('skill', models.CharField(blank=True, db_index=True, default='', help_text='skill or tool', max_length=80)),
                        ('purpose', models.CharField(blank=True, default='', help_text='answer, retrospective, review, trainer, debug, rerank, …', max_length=40)),
                        ('provider', models.CharField(choices=[('openai', 'OpenAI-compatible chat completions'), ('ollama', 'Ollama generate'), ('claude', 'claude process')], max_length=10)),
                        ('endpoint', models.CharField(help_text='the URL (no credentials) or command called', max_length=500)),
                        ('model', models.CharField(max_length=200)),
                        ('max_tokens', models.PositiveIntegerField(blank=True, help_text='the generation limit sent', null=True)),
                        ('request', models.JSONField(blank=True, help_text='the body sent (redacted, capped)', null=True)),
                        ('response', models.TextField(blank=True, default='', help_text="the server's raw body (redacted, capped)")),
                        ('outcome', models.CharField(choices=[('ok', 'ok'), ('model_error', 'model error: the server refused the request (4xx: unknown model, bad key)'), ('truncated', 'truncated: cut at the token limit'), ('outage', "outage: unreachable, timed out or 5xx (not the model's fault)"), ('bad_output', 'bad output: not JSON, wrong shape, failed a check, degenerate')], db_index=True, max_length=12)),
                        ('error', models.TextField(blank=True, default='')),
                        ('status_code', models.PositiveIntegerField(blank=True, null=True)),
                        ('finish_reason', models.CharField(blank=True, default='', max_length=40)),
                        ('latency_ms', models.PositiveIntegerField(default=0)),
                        ('input_tokens', models.PositiveIntegerField(blank=True, null=True)),
                        ('output_tokens', models.PositiveIntegerField(blank=True, null=True)),
                        ('cost_usd', models.DecimalField(blank=True, decimal_places=6, max_digits=12, null=True)),
                        ('cost_source', models.CharField(blank=True, default='', max_length=20)),
                        ('redactions', models.JSONField(blank=True, default=list)),
                        ('requested_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'hyperguild_modelcall',
                        'ordering': ['-created_at', '-id'],
                        'indexes': [models.Index(fields=['model', '-created_at'], name='modelcall_model_recent')],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
