"""Writes of the project app: users and groups."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import connection, transaction

from athena.errors import Conflict, Forbidden, ValidationFailed
from athena.validators import text_problem

_USERNAME = re.compile(r"^[\w.@+-]{1,150}$")

# Roles are plain Django groups so admins manage them in the admin like any other group.
ROLE_EMPLOYEE = "employees"
ROLE_ADMIN = "kb-admins"
ROLE_COMPLIANCE = "compliance"


@transaction.atomic
def user_create_or_update(
    *,
    username: str,
    groups: Sequence[str] = (),
    password: str | None = None,
    email: str = "",
    staff: bool = False,
) -> tuple[User, bool]:
    if not _USERNAME.match(username):
        raise ValidationFailed(f"invalid user name {username!r}: use letters, digits and @.+-_ (max 150)")
    for name in groups:
        if not name.strip() or len(name) > 150 or text_problem(name):
            raise ValidationFailed(f"invalid group name {name!r}")
    if email:
        try:  # stored as given before: a typo reached the user list (and password-reset mail) unnoticed
            validate_email(email)
        except DjangoValidationError:
            raise ValidationFailed(f"invalid e-mail address {email!r}") from None
    user, created = User.objects.get_or_create(username=username, defaults={"email": email})
    if password:
        user.set_password(password)
    elif created:
        user.set_unusable_password()
    if email:
        user.email = email
    user.is_staff = staff or user.is_staff
    user.save()
    user.groups.add(*groups_held(names=[name.strip() for name in groups]))
    return user, created


def groups_held(*, names: Iterable[str], create: bool = True) -> list[Group]:
    """The groups of these names, each held against deletion until the caller's transaction ends, for rows that
    are about to point at them (a document's ACL, a user's membership). A missing group is created, or with
    `create=False` refused as unknown (ValidationFailed).

    Django carries out a delete's on_delete itself, on the rows it sees when it starts, and PostgreSQL checks a
    foreign key at commit: a membership written beside a group's delete failed there (a server error). FOR NO
    KEY UPDATE waits for a delete under way, and makes a later one (knowledge.services.groups_delete) wait for
    this transaction, without blocking other foreign-key checks; a group that a delete removed meanwhile is a
    conflict the caller is told about, rather than a group silently made again."""
    wanted = list(dict.fromkeys(names))
    if create:
        groups = {name: Group.objects.get_or_create(name=name)[0] for name in wanted}
    else:
        groups = {group.name: group for group in Group.objects.filter(name__in=wanted)}
        unknown = sorted(set(wanted) - set(groups))
        if unknown:
            raise ValidationFailed(f"unknown group(s): {', '.join(unknown)}", details={"unknown": unknown})
    held = set(
        Group.objects.select_for_update(no_key=True)
        .filter(pk__in=[group.pk for group in groups.values()])
        .order_by("pk")  # one order for every writer: two of them never wait for each other in a cycle
        .values_list("pk", flat=True)
    )
    deleted = sorted(name for name, group in groups.items() if group.pk not in held)
    if deleted:
        raise Conflict(
            f"group(s) deleted by someone else while this change was being made: {', '.join(deleted)}",
            details={"deleted": deleted},
        )
    return list(groups.values())


def user_held(*, user_id: int) -> None:
    """Hold the user's row against deletion until the caller's transaction ends, before writing the first row
    that points at the user (a conversation, an upload); refuse (Forbidden) when the user was deleted meanwhile.

    The rows a user makes protect the user from deletion, but Django looks for them when its delete starts and
    PostgreSQL checks a foreign key at commit: a user's first question written beside an admin's delete failed
    there, a server error for whichever committed last. FOR KEY SHARE waits for a delete under way
    (users_hold_for_delete) and then finds the row gone, and makes a later delete wait until the new row has
    committed, where the delete sees it; it does not block the user's other requests (two first questions at
    once, the sign-in's last_login)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {User._meta.db_table} WHERE id = %s FOR KEY SHARE", [user_id])
        if cursor.fetchone() is None:
            raise Forbidden("this account was deleted")


def users_hold_for_delete(*, ids: Iterable[int]) -> None:
    """Before an admin's delete looks for what protects these users: lock them, in the caller's transaction,
    so that a first question or upload being stored (user_held) commits first and is seen, and one that starts
    later waits for the delete."""
    list(
        User.objects.select_for_update().filter(pk__in=list(ids)).order_by("pk").values_list("pk", flat=True)
    )
