"""Fault-injecting replacements, each selected through the server's config."""

from __future__ import annotations

from jupyter_server.auth.authorizer import Authorizer


class DenyWritesAuthorizer(Authorizer):
    """Allow reads, refuse every write (``ServerApp.authorizer_class``)."""

    def is_authorized(self, handler, user, action, resource):  # type: ignore[no-untyped-def]
        return action == "read"


class DenyAllAuthorizer(Authorizer):
    """Refuse everything (``ServerApp.authorizer_class``)."""

    def is_authorized(self, handler, user, action, resource):  # type: ignore[no-untyped-def]
        return False
