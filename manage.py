#!/usr/bin/env python
import sys

from django.core.management import execute_from_command_line

from hyperguild.boot import prepare_process, release_process


def main() -> None:
    # The entry point of every command (serve, qcluster, migrate…): the secret key and, without DATABASE_URL,
    # the embedded PostgreSQL exist before Django reads its settings, which only read (hyperguild.boot).
    prepare_process()
    try:
        execute_from_command_line(sys.argv)
    finally:
        release_process()  # the embedded PostgreSQL this command had to start stops with it


if __name__ == "__main__":
    main()
