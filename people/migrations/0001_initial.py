"""People's models, moved from the core (issue 49): their tables stay where they are (`db_table`),
so only Django's record of which app owns them changes; nothing is written to the database here."""

import django.contrib.postgres.fields
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
                    name='RedeemedAuthorizationCode',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('code_digest', models.CharField(max_length=64, unique=True)),
                        ('client_id', models.CharField(max_length=100)),
                        ('access_token_checksum', models.CharField(blank=True, max_length=64)),
                        ('token_family', models.UUIDField(blank=True, null=True)),
                        ('redeemed_at', models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                        ('replayed_at', models.DateTimeField(blank=True, null=True)),
                    ],
                    options={
                        'db_table': 'hyperguild_redeemedauthorizationcode',
                    },
                ),
                migrations.CreateModel(
                    name='ClientRegistrationAttempt',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('address', models.GenericIPAddressField(blank=True, null=True)),
                        ('at', models.DateTimeField(default=django.utils.timezone.now)),
                    ],
                    options={
                        'db_table': 'hyperguild_clientregistrationattempt',
                        'indexes': [models.Index(fields=['address', 'at'], name='hyperguild__address_8c9f88_idx')],
                    },
                ),
                migrations.CreateModel(
                    name='PersonalToken',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=100)),
                        ('prefix', models.CharField(db_index=True, max_length=16)),
                        ('token_hash', models.CharField(max_length=64, unique=True)),
                        ('scopes', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=50), size=None)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('expires_at', models.DateTimeField(blank=True, null=True)),
                        ('revoked_at', models.DateTimeField(blank=True, null=True)),
                        ('last_used_at', models.DateTimeField(blank=True, null=True)),
                        ('last_used_ip', models.GenericIPAddressField(blank=True, null=True)),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='personal_tokens', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'hyperguild_personaltoken',
                        'ordering': ['-created_at', '-id'],
                    },
                ),
                migrations.CreateModel(
                    name='CredentialUse',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(choices=[('token', 'personal token'), ('oauth', 'OAuth access token')], max_length=8)),
                        ('credential', models.CharField(help_text="token prefix and name, or the OAuth client's name", max_length=200)),
                        ('method', models.CharField(max_length=10)),
                        ('path', models.CharField(max_length=300)),
                        ('address', models.GenericIPAddressField(blank=True, null=True)),
                        ('at', models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                        ('user', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'hyperguild_credentialuse',
                        'ordering': ['-at', '-id'],
                        'indexes': [models.Index(fields=['user', '-at'], name='hyperguild__user_id_f8f0dc_idx')],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
