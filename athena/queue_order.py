"""The order in which a worker takes tasks from the queues it consumes (the broker's `queue_order_strategy`,
athena/settings/base.py): the queues in the order of its -Q list, the first that holds a task giving it, with
a turn for the others after QUEUE_TURN_AFTER tasks in a row from the first.

Pure priority (kombu's "priority") starves the later queues for as long as the first never empties. The stack's
worker and the systemd unit name `realtime,housekeeping,embed,ingest`: beat's short tasks, the audit checkpoints,
the hourly totals of aggregated audit events (their counters are kept two hours) and the upload expiry, come
right after the questions. A busy hour keeps a few questions waiting at all times (admission refuses the rest),
so none of them ran until it was over. With a turn, a question waits for at most one task of another
queue in every QUEUE_TURN_AFTER + 1 (an embed task holds one model batch: knowledge.tasks.EMBED_TASK_CHUNKS)."""

from __future__ import annotations

from kombu.utils.scheduling import round_robin_cycle

# questions taken in a row before the other queues get a turn: a question's wait grows by at most one embed
# batch in nine, and an audit checkpoint or the hour's totals wait for nine questions per task ahead of them
QUEUE_TURN_AFTER = 8


class QuestionsFirstCycle(round_robin_cycle):
    """kombu's queue cycle (`consume` gives the queues to read, in order; `rotate` hears which one gave the
    last message): the first queue first, except that after QUEUE_TURN_AFTER messages in a row from it the
    next read lists the others first, in turn, so that each of them is reached however full the first is. A
    message from any other queue (the first was empty, or it was a turn) starts the count again."""

    def __init__(self, it: list[str] | None = None) -> None:
        super().__init__(it)
        self.in_a_row = 0
        self.others: list[str] = []

    def update(self, it: list[str]) -> None:
        super().update(it)
        self.others = [queue for queue in self.others if queue in self.items[1:]] + [
            queue for queue in self.items[1:] if queue not in self.others
        ]

    def consume(self, n: int) -> list[str]:
        if self.in_a_row < QUEUE_TURN_AFTER or not self.others:
            return self.items[:n]
        return [*self.others, *self.items[:1]][:n]

    def rotate(self, last_used: str) -> str:
        if self.items and last_used == self.items[0]:
            self.in_a_row += 1
            return last_used
        self.in_a_row = 0
        if last_used in self.others:  # the next turn starts with another queue
            self.others.append(self.others.pop(self.others.index(last_used)))
        return last_used
