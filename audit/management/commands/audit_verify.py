from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Recompute the audit log's hash chain; report the first broken event and exit non-zero on a break."

    def handle(self, *args: Any, **options: Any) -> None:
        from audit.services import audit_verify

        report = audit_verify()
        if report.ok:
            self.stdout.write(f"chain intact ({report.checked} events)")
            return
        raise CommandError(
            f"chain broken at event {report.first_broken_id}: {report.reason} "
            f"({report.checked} events verified before it)"
        )
