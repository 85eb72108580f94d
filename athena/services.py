"""Writes of the project app: users and groups."""

from __future__ import annotations

import re
from collections.abc import Sequence

from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import transaction

from athena.errors import ValidationFailed
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
    for name in groups:
        group, _ = Group.objects.get_or_create(name=name.strip())
        user.groups.add(group)
    return user, created
