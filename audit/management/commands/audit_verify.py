from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = (
        "Verify the audit log: every event's keyed hash and back-link, and the head against the latest signed "
        "checkpoint (a deleted tail, an edited event, a chain re-hashed without the key, a gap). Exits "
        "non-zero on any problem. --checkpoint appends a new signed checkpoint after a clean verification."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--checkpoint", action="store_true", help="append a checkpoint when intact")

    def handle(self, *args: Any, **options: Any) -> None:
        from audit.services import audit_checkpoint_write, audit_verify

        report = audit_verify()
        if report.ok:
            anchor = (
                f"; head matches the checkpoint at event {report.checkpoint_event_id}"
                if report.checkpoint_event_id
                else "; no checkpoint yet"
            )
            self.stdout.write(f"chain intact ({report.checked} events){anchor}")
            if options["checkpoint"]:
                written = audit_checkpoint_write()
                if written is None:
                    self.stdout.write(
                        "no checkpoint written: "
                        + (
                            "the log holds no event yet"
                            if not report.checked
                            else "the chain did not verify a second time; run audit_verify again"
                        )
                    )
                elif written.event_id == report.checkpoint_event_id:
                    self.stdout.write(
                        f"no checkpoint written: the last one already covers the head (event {written.event_id})"
                    )
                else:
                    self.stdout.write(f"checkpoint written at event {written.event_id}")
            return
        lines = []
        if report.first_broken_id is not None:
            lines.append(
                f"chain broken at event {report.first_broken_id}: {report.reason} "
                f"({report.checked} events verified before it)"
            )
        lines.extend(report.problems)
        raise CommandError("\n".join(lines))
