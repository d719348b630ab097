"""Shared behaviour of every xcsh REST handler: services, the caller, JSON bodies, errors."""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from http.client import responses
from typing import Any, TypeVar, cast

from jupyter_core.utils import ensure_async
from jupyter_server.auth.authorizer import Authorizer
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from jupyter_xcsh.calls.caller import Caller, Permission
from jupyter_xcsh.errors import InvalidRequestError, XcshError, status_for
from jupyter_xcsh.events.origin import mark_origin, valid_traceparent
from jupyter_xcsh.mcp.jupyter_ai import CHAT_HEADER, PERSONA_HEADER, persona_identity
from jupyter_xcsh.mcp.protocol import client_name
from jupyter_xcsh.notebook.rooms.presence import DEFAULT_NAME as DEFAULT_AGENT_NAME
from jupyter_xcsh.paths import hide_root
from jupyter_xcsh.services import XcshServices

_Method = TypeVar("_Method", bound=Callable[..., Any])

#: Deepest nesting of arrays and objects a request body may have. No request needs more than a
#: few levels; a bound keeps parsing (and everything that walks the body) far from Python's
#: recursion limit, whose RecursionError would otherwise be a 500.
MAX_BODY_DEPTH = 64

# A lone surrogate can only come from a ``\uD800``..``\uDFFF`` escape (raw UTF-8 cannot encode
# one); bodies without such an escape skip the search for them.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def permission_authorized(permission: Permission) -> Callable[[_Method], _Method]:
    """jupyter_server's own ``@authorized``, asking ``permission`` (declared by a tool).

    The same question to the server's authorizer, at the same moment (before the body is read)
    and the same 403 as ``@authorized(action)`` with the resource as the handler's
    ``auth_resource``: the permission is written once, on the tool, not again here.
    """
    return cast(
        Callable[[_Method], _Method],
        authorized(permission.action, resource=permission.resource),
    )


def tool_authorized(tool: Any) -> Callable[[_Method], _Method]:
    """``@authorized`` with the permission every call of ``tool`` (a tool class) needs."""
    return permission_authorized(tool.permission)


class DomainHTTPError(web.HTTPError):
    """A domain error on its way to the client: its status, and its body written verbatim."""

    def __init__(self, error: XcshError) -> None:
        super().__init__(status_for(error), "%s", error.message)
        self.body = error.body()


class RememberingAuthorizer:
    """The server's authorizer for one request: what it allowed is asked once.

    A REST verb's ``@authorized`` asks for its permission, then the tool asks for what it
    needs, often the same: the second ask is answered from memory. A refusal is not
    remembered. Everything else is the server's authorizer's.
    """

    def __init__(self, authorizer: Authorizer) -> None:
        self._authorizer = authorizer
        self._allowed: set[tuple[str, str]] = set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._authorizer, name)

    def is_authorized(
        self, handler: Any, user: Any, action: str, resource: str
    ) -> bool | Awaitable[bool]:
        """The server's authorizer's answer, asked once per allowed ``(action, resource)``."""
        key = (action, resource)
        if key in self._allowed:
            return True
        answer = self._authorizer.is_authorized(handler, user, action, resource)
        if inspect.isawaitable(answer):
            return self._remember(key, answer)
        if answer:
            self._allowed.add(key)
        return answer

    async def _remember(self, key: tuple[str, str], answer: Awaitable[bool]) -> bool:
        allowed = await answer
        if allowed:
            self._allowed.add(key)
        return allowed


class XcshAPIHandler(APIHandler):
    """An ``APIHandler`` receiving the extension's services through ``initialize``."""

    services: XcshServices
    _remembering: RememberingAuthorizer | None = None
    _agent_key: str | None = None

    def initialize(self, services: XcshServices) -> None:
        """Keep the services the extension app built once for every request."""
        self.services = services

    async def prepare(self) -> None:  # type: ignore[override]
        """The server's checks, then the request's calls marked with their origin.

        The agent's name as the caller gives it (``X-Agent-Name``, or a Jupyter AI persona's
        headers; a caller that names itself not is left unnamed, its calls shown as before)
        and the ``traceparent`` header (W3C trace context, when well formed), carried by the
        event that starts each call and kept in the activity history, as MCP's
        ``clientInfo.name`` and trace context are (``handlers/mcp.py`` marks its own per
        JSON-RPC request). tornado runs each request in a task of its own: the mark ends
        with it.
        """
        await super().prepare()
        caller = self.caller
        named = caller.persona or self.request.headers.get("X-Agent-Name", "").strip()
        trace = valid_traceparent(self.request.headers.get("traceparent"))
        mark_origin(client_name(caller.name) if named else "", trace)

    @property
    def authorizer(self) -> Authorizer:
        """The server's authorizer, asked once per permission it allows in this request."""
        if self._remembering is None:
            self._remembering = RememberingAuthorizer(super().authorizer)
        return cast(Authorizer, self._remembering)

    @property
    def caller(self) -> Caller:
        """The current user, with the server's authorizer asked on their behalf."""

        async def authorize(action: str, resource: str) -> bool:
            allowed = self.authorizer.is_authorized(self, self.current_user, action, resource)
            return bool(await ensure_async(allowed))

        # A token's caller is an agent ("Agent" unless it says); a browser session (the lab's
        # own requests) is one only when it names itself.
        headers = self.request.headers
        name = headers.get("X-Agent-Name", "").strip()
        agent = self.agent_key()
        # A Jupyter AI persona: named by its persona and chat (one agent per chat).
        persona = persona_identity(headers.get(PERSONA_HEADER, ""), headers.get(CHAT_HEADER, ""))
        if persona is not None:
            name = name or persona[0]
            agent = f"{agent} {persona[1]}"
        if not name and self.token_authenticated:
            name = DEFAULT_AGENT_NAME
        return Caller(
            user=self.current_user,
            authorize=authorize,
            agent=agent,
            name=name,
            persona=persona[1] if persona is not None else "",
            gate=self.services.policies,
        )

    def agent_key(self) -> str:
        """Who calls, the same across their requests: the credential, else the user.

        A shared token makes a new anonymous user per request, so the credential is what stays
        the same (hashed: the token never sits in a key); otherwise (cookie, JupyterHub) the
        user's name.
        """
        key = self._agent_key
        if key is None:  # once per request (an MCP request asked three times)
            token = self.identity_provider.get_token(self) if self.token_authenticated else None
            if token:
                key = "token:" + hashlib.sha256(token.encode()).hexdigest()[:32]
            else:
                key = "user:" + str(getattr(self.current_user, "username", self.current_user))
            self._agent_key = key
        return key

    def query_argument(self, name: str) -> str | None:
        """The query parameter ``name``, None when absent; given twice, a 400 that says so."""
        values = self.request.query_arguments.get(name)
        if not values:
            return None
        if len(values) > 1:
            raise InvalidRequestError(f"{name} must be given once")
        return self.decode_argument(values[0], name=name)

    def json_body(self) -> dict[str, Any]:
        r"""Parse the request body as a JSON object, or fail with a 400 that says why.

        Beyond syntax, a body is refused when it nests deeper than ``MAX_BODY_DEPTH``, uses
        ``NaN``/``Infinity`` (not JSON, though Python's parser takes them) or holds a lone
        surrogate (``"\ud800"``: valid JSON syntax but no Unicode text; it cannot be saved,
        sent to a kernel or used as a file name).
        """
        raw = self.request.body
        if not raw:
            raise web.HTTPError(400, "Request body is empty; expected a JSON object")
        try:
            body = json.loads(raw, parse_constant=_refuse_constant)
        except RecursionError:
            raise web.HTTPError(400, _too_deep()) from None
        except (UnicodeDecodeError, ValueError) as e:
            raise web.HTTPError(400, "%s", f"Request body is not valid JSON: {e}") from None
        if not isinstance(body, dict):
            raise web.HTTPError(400, "Request body must be a JSON object")
        problem = check_body(body, surrogates=_SURROGATE_ESCAPE.search(raw) is not None)
        if problem is not None:
            raise web.HTTPError(400, "%s", problem)
        return body

    @contextmanager
    def domain_errors(self) -> Iterator[None]:
        """Turn the errors raised inside the block into HTTP errors with their exact body.

        A domain error becomes its status and body. An ``HTTPError`` of one of the server's
        managers passes through with its status, but with the server's root directory taken out
        of its message: jupyter_server's contents manager names files by their absolute path
        (``Encoding error saving /srv/root/a.ipynb: ...``), which a caller must not learn.
        """
        try:
            yield
        except XcshError as e:
            raise DomainHTTPError(e) from None
        except DomainHTTPError:
            raise
        except web.HTTPError as e:
            message = hide_root(_message(e), self._root_dirs())
            raise web.HTTPError(e.status_code, "%s", message, reason=e.reason) from None

    def _root_dirs(self) -> list[str]:
        roots = [self.settings.get("server_root_dir")]
        roots.append(getattr(self.contents_manager, "root_dir", None))
        return [root for root in roots if isinstance(root, str) and root]

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Write an error as JSON with its exact message (and a domain error's whole body).

        jupyter_server writes ``HTTPError.log_message``, which tornado returns with every ``%``
        doubled when the error has no format arguments; the message is written as raised here.
        """
        exc_info = kwargs.get("exc_info")
        error = exc_info[1] if exc_info else None
        if status_code == 405:
            # RFC 9110: a 405 lists the methods the resource has.
            self.set_header("Allow", ", ".join(self.allowed_methods()))
        if not isinstance(error, web.HTTPError):
            super().write_error(status_code, **kwargs)
            return
        if isinstance(error, DomainHTTPError):
            body = error.body
        else:
            body = {
                "message": _message(error) or responses.get(status_code, "Unknown HTTP Error"),
                "reason": error.reason,
            }
        self.set_header("Content-Type", "application/json")
        self.log.warning("wrote error: %r", body["message"])
        self.finish(json.dumps(body))

    @classmethod
    def allowed_methods(cls) -> list[str]:
        """The HTTP methods this handler implements (``OPTIONS`` comes from ``APIHandler``)."""
        return [
            method
            for method in cls.SUPPORTED_METHODS
            if getattr(cls, method.lower()) is not getattr(web.RequestHandler, method.lower())
        ]


class NotFoundHandler(XcshAPIHandler):
    """Any other URL under ``/api/xcsh``: a JSON 404 (tornado's own is an HTML page)."""

    def prepare(self) -> None:  # type: ignore[override]
        """Answer 404 whatever the method, before any other check."""
        raise web.HTTPError(404, "%s", f"Not found: {self.request.path}")


def _message(error: web.HTTPError) -> str:
    # tornado doubles every % of a log_message raised without arguments (its get_message()
    # undoes that; tornado < 6.5 has no get_message() and keeps the plain text).
    get_message = getattr(error, "get_message", None)
    if get_message is not None:
        return str(get_message() or "")
    if error.log_message is None:
        return ""
    return error.log_message % error.args if error.args else error.log_message


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _too_deep() -> str:
    return f"Request body is nested too deeply (more than {MAX_BODY_DEPTH} levels)"


def check_body(body: Any, *, surrogates: bool = True) -> str | None:
    r"""Return why a parsed JSON body is unusable (too deep, a lone surrogate), or None.

    ``surrogates=False`` skips the search for lone surrogates (a body without ``\u`` escapes
    cannot hold one). Iterative, so a body at any depth is checked without recursion.
    """
    stack: list[tuple[Any, str, int]] = [(body, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth >= MAX_BODY_DEPTH:
                return _too_deep()
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str):
                    if surrogates and _SURROGATE.search(key):
                        return f"Invalid Unicode in a field name{_in(where)}: a lone surrogate"
                    child = f"{where}.{key}" if where else key
                else:
                    child = f"{where}[{key}]"
                stack.append((item, child, depth + 1))
        elif surrogates and isinstance(value, str):
            match = _SURROGATE.search(value)
            if match:
                code = f"\\u{ord(match.group()):04x}"
                return f"Invalid Unicode in {where}: a lone surrogate ({code})"
    return None


def _in(where: str) -> str:
    return f" of {where}" if where else ""
